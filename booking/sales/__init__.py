"""Sales: holds, carts, checkout, orders, offers and promos, sessions, exchanges, the waiting room, tasks."""
