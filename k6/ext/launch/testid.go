package launch

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"
)

// NewTestID is the one place a run's testid is made (tests/test_launcher.py fails when a
// second appears): the UTC time to the second and four random hex digits, e.g.
// 20261126-081500-3fa9. k6/contract.json's testid rule holds for it. Every launcher gets it
// from here: `k6 x tbs run` (scripts/k6, --instances, compose's k6 and k6-instance),
// `k6 x tbs testid`, `k6 x tbs plan` (k8s/render-testrun) and, for a stock `k6 run` of the
// scripts, k6/lib/run.js through tbs.newTestId().
func NewTestID(now time.Time) string {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		binary.BigEndian.PutUint16(b[:], uint16(now.UnixNano()))
	}
	return fmt.Sprintf("%s-%04x", now.UTC().Format("20060102-150405"), binary.BigEndian.Uint16(b[:]))
}
