"""The REST routes, one router per area."""
