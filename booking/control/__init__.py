"""The staff site: ModelAdmins over MongoDB documents (see booking/models.py for why).

Each module holds one ModelAdmin whose views parse input with the forms in booking/control/forms.py,
read through booking/control/selectors.py and write through the engine's services.
"""
