"""Result records and their files: `records` (one frozen dataclass per kind of result;
`projection` holds those of a benchmark result's projection),
`files` (the one writer and reader of result files, checking them on read) and `codec`
(records ⇄ JSON values)."""
