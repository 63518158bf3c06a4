package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckMakesAMissingFolderAndLeavesNothingBehind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "results")
	if err := Check(dir); err != nil {
		t.Fatalf("Check(%s): %v", dir, err)
	}
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != 0 {
		t.Fatalf("after Check the folder holds %v (%v), want it made and empty", left, err)
	}
}

func TestCheckNamesTheValueAndWhatToDo(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for dir, why := range map[string]string{file: "is not a folder", "": "is empty"} {
		err := Check(dir)
		if err == nil {
			t.Fatalf("Check(%q) passed, want %q", dir, why)
		}
		for _, want := range []string{"results_dir " + dir + " " + why, "-e results_dir=DIR", "nothing was run"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Check(%q) = %q, want it to hold %q", dir, err, want)
			}
		}
	}
}
