package proc

import "time"

// DefaultGrace is spawn's one default grace period: how long a stopping
// agent gets between the polite signal (SIGTERM, or SIGINT for a budget
// stop) and SIGKILL when the caller does not say, and how long Wait waits
// for a child's copied output pipes once it has exited.
const DefaultGrace = 2 * time.Second
