"""Change sources: where change events come from."""
