//go:build !js && !wasip1

package postgres

import (
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/internal/driver/pg"
)

func init() { driver.RegisterServer("postgres", pg.Open) }
