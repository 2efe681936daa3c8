"""The Scrapy side of distributed mode: the scheduler that claims work from Redis, the pipeline
that commits results there, and the coordinator that feeds rows and writes results.jsonl.
The Redis frontier itself (:mod:`urlcheck.cluster`) knows nothing of Scrapy."""
