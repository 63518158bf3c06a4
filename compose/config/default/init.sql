-- Run once by TiDB when the cluster is created (tidb-server --initialize-sql-file).
-- The database the workloads (k6/oltp.js, k6/prepare.js) use.
CREATE DATABASE IF NOT EXISTS sbtest;
