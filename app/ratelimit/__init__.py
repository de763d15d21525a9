"""Rate limits: fixed-window counters shared by every API process (Redis with a broker, else the database)."""
