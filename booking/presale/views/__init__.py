"""The buyer's views, one module per part of the purchase."""
