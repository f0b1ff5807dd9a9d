"""Outgoing webhooks: the theater's other systems told of orders, check-ins and canceled
performances (docs/api.md, "Webhooks"; docs/architecture.md, "Webhooks")."""
