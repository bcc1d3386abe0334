//go:build !unix

package engine

import (
	"errors"
	"os"
)

func lowestPriority() error { return errors.ErrUnsupported }

func pause(*os.Process, bool) error { return errors.ErrUnsupported }
