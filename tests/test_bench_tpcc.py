"""tools/bench's TPC-C cells (issue #46 item 5, tools/tbstools/benchtpcc.py), the parts that need no
server: go-tpc's end-of-run summary read as its committed transactions, and a go-tpc output
without one refused. The cells themselves need two prepares of a warehouse each (minutes on this
shared host: tests/test_bench_smoke.py does not run them); docs/bench.md gives their command and
figures. The lines below are go-tpc v1.0.7's format: tpcc/workload.go outputRtMeasurement
(`%s%-6s - %s`, prefix `[Summary] `) and pkg/measurement/hist.go Summary()."""
import pytest

from tbstools import benchtpcc

pytestmark = pytest.mark.fast


def summary_line(op, count):
    return (f"[Summary] {op:<6} - Takes(s): 20.0, Count: {count}, TPM: {count * 3:.1f}, Sum(ms): 1234.5, Avg(ms): 4.1, "
            f"50th(ms): 3.7, 90th(ms): 6.3, 95th(ms): 7.9, 99th(ms): 12.1, 99.9th(ms): 21.0, Max(ms): 33.6")


def test_the_summary_counts_the_five_transactions_without_errors():
    out = "\n".join([
        "[Current] NEW_ORDER - Takes(s): 10.0, Count: 400, TPM: 2400.0, Sum(ms): 1.0, Avg(ms): 4.1",  # a progress line
        summary_line("DELIVERY", 41), summary_line("NEW_ORDER", 452), summary_line("NEW_ORDER_ERR", 3),
        summary_line("ORDER_STATUS", 38), summary_line("PAYMENT", 430), summary_line("STOCK_LEVEL", 40),
        "tpmC: 1356.0, efficiency: 10544.3%",
    ])
    assert benchtpcc.gotpc_transactions(out) == 41 + 452 + 38 + 430 + 40


def test_an_output_without_a_summary_is_refused():
    with pytest.raises(SystemExit) as e:
        benchtpcc.gotpc_transactions("panic: a fatal occurred when preparing data\n")
    assert "go-tpc printed no [Summary] lines" in str(e.value) and "panic" in str(e.value)
