-- Run once by TiDB when the cluster is created (tidb-server --initialize-sql-file), with the
-- `seed` set (CLUSTER_CONFIG=seed): the global variables of PingCAP's published sysbench
-- reports. Global variables persist in the cluster: switching sets needs a data reset.

-- The database the workloads (k6/oltp.js, k6/prepare.js) use.
CREATE DATABASE IF NOT EXISTS sbtest;

-- Prepared plan cache: [prepared-plan-cache] enabled = true in seeds 000, 003, 004 (a system
-- variable since v6.1); 1000 plans per session as seed 004 (tidb_prepared_plan_cache_size)
-- and seed 002 (tidb_session_plan_cache_size, its name since v7.1).
SET GLOBAL tidb_enable_prepared_plan_cache = ON;
SET GLOBAL tidb_session_plan_cache_size = 1000;

-- seeds 000, 003, 004
SET GLOBAL tidb_hashagg_final_concurrency = 1;
SET GLOBAL tidb_hashagg_partial_concurrency = 1;

-- seeds 003 (v5.0), 004
SET GLOBAL tidb_enable_async_commit = ON;
SET GLOBAL tidb_enable_1pc = ON;
SET GLOBAL tidb_guarantee_linearizability = OFF;
SET GLOBAL tidb_enable_clustered_index = ON;
