-- weir: compatible-with-previous: yes
--   a nullable column of `migrations`: earlier releases read only its `version` and write only `version` and
--   `name`.
--
-- weir-postgres schema: each applied migration records whether workers of the releases before it keep
-- working against it (docs/durable.md, "Upgrading"), so that a process of an earlier release, which does
-- not have the newer migrations' files, can decide from the database alone whether to run against a newer
-- schema.
--
-- `compatible_with_previous` is the answer of the migration's `weir: compatible-with-previous` header: true
-- when every release that accepted the schema before the migration keeps working after it, false when it
-- does not (a function's signature those releases call changed, a column they use dropped or renamed, a state
-- they write or read changed), NULL when the row was written without one (by another migration tool): a
-- migration that does not say is taken as incompatible. `migrate` fills it in for the migrations applied
-- before this one, from their files.
--
-- Workers of version 9 never read it. Their library, though, refuses any schema newer than version 9 (it
-- cannot read this column): from version 9 to 10, replace the processes rather than restart old ones.

ALTER TABLE weir_schema.migrations ADD COLUMN compatible_with_previous boolean;
