"""The staff site: ModelAdmins over MongoDB documents (see booking/models.py for why).

Each module holds one ModelAdmin whose views parse input with the forms in booking/admin_forms.py,
read through booking/staff/selectors.py and write through the engine's services.
"""
