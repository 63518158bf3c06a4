package tbs

import (
	"time"

	"tidb-bench-stack/k6/ext/launch"
)

// NewTestId is a new testid from the launcher core (launch.NewTestID, the one place testids
// are made), for a run started by a stock `k6 run` without -e testid.
func (m *Module) NewTestId() string { //nolint:revive // JS name newTestId
	return launch.NewTestID(time.Now())
}
