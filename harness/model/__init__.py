"""Pure data: topologies, contracts, the catalogue loader, records, violations, assets."""
