module tidb-bench-stack/tests/tools/funclen

go 1.26.5
