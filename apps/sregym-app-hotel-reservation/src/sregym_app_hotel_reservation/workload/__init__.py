"""The workload generator: open-loop load with the DeathStarBench mix, and the stats API oracles query."""
