"""Infrastructure and the domain's words: MongoDB, clock, ids, errors, fault points, formatting, caches."""
