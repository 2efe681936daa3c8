"""Benchmarks; a package so that a crawl started from the repository root can import
bench-local components (bench._random_proxy)."""
