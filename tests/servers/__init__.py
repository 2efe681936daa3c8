"""Servers only the tests and bench/ use: a real forward proxy on loopback, run as a subprocess;
and a raw HTTP server writing exact bytes, for answers no HTTP library would send (rawhttp)."""
