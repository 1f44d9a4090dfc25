"""Tests of the YAML rule engine."""
