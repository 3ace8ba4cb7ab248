"""Tests for the crawler and the local test site."""
