"""Upkeep: the work no request does, over every domain. The worker's tasks and their schedule's
targets, reconcile (finishes or undoes what a crash or a lost task left half done), the backfill
run at deploys, and the invariant checker. Above the domains, below the pages and commands."""
