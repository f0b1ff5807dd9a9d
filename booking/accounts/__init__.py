"""Buyer accounts without passwords: a buyer signs in with a link mailed to their address
(django-sesame) and sees every booking made with that address."""
