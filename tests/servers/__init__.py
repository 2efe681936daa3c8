"""Servers only the tests and bench/ use: a real forward proxy on loopback, run as a subprocess."""
