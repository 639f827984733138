"""Measured points for `napkin validate`, each with its source and date."""
