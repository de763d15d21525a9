"""The JSON API: one router per domain, thin (parse, call a service, answer a response model)."""
