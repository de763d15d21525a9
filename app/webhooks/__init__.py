"""Webhooks (Standard Webhooks): endpoints per API token, deliveries queued in the database, sent by a worker."""
