"""Planning a run before it runs: `robench eval --dry-run`'s estimated passes (`dry_run`) and
the throughput real runs save per device for its wall time (`throughput`); docs/cost.md."""
