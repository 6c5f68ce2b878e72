"""Result records and their files: `records` (one frozen dataclass per kind of result),
`files` (the one writer and reader of result files, checking them on read) and `codec`
(records ⇄ JSON values)."""
