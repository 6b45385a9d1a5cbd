package benchstat

import "os"

// FileSize is the size of path in bytes, 0 if it cannot be stat'd (an
// optional subject that was not built).
func FileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
