package runs

import (
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/team"
)

// Resumable says whether spawn resume would continue the run rec records:
// nil, or a usage *fault.Error saying why not (it is still running, the
// reviewers approved it, it is a solo run whose coder finished, it is in
// github mode or a spawn pr run, or it left no sandbox). It reads only the record: a worktree
// removed since is found when resuming.
func Resumable(rec *observability.Record) error {
	switch {
	case rec.Status == observability.StatusRunning:
		return fault.Errorf(fault.KindUsage, nil, "run %s is still running", rec.ID)
	case rec.Mode == observability.ModeGitHub:
		return fault.Errorf(fault.KindNotImplemented, nil, "run %s is in github mode, which spawn resume cannot continue yet", rec.ID)
	case rec.Mode == observability.ModePR:
		return fault.Errorf(fault.KindNotImplemented, nil, "run %s is a spawn pr run, which spawn resume cannot continue", rec.ID)
	case rec.Branch == "":
		return fault.Errorf(fault.KindUsage, nil, "run %s left no sandbox to continue in", rec.ID)
	}
	if err := team.Continuable(rec.Mode, team.ProgressOf(rec)); err != nil {
		return fault.Errorf(fault.KindUsage, err, "run %s has %v", rec.ID, err)
	}
	return nil
}
