"""The buyer's pages: what's on, seat maps, cart, checkout, payment, orders, the waiting room."""
