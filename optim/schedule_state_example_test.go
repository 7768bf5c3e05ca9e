package optim_test

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// A warm-up then cosine schedule, saved after 30 steps with its optimizer,
// continues in a new process exactly where it stopped.
func ExampleSequentialLR_StateDict() {
	build := func() (optim.Optimizer, optim.Scheduler) {
		opt := optim.NewAdamW([]*autograd.Var{autograd.Param(tensor.Zeros([]int{3}))}, optim.AdamOptions{LR: 0.1})
		warm := optim.NewLinearWarmup(opt, 10, 0.01)
		cosine := optim.NewCosineAnnealingLR(opt, 90, 0)
		return opt, optim.NewSequentialLR([]optim.Scheduler{warm, cosine}, []int{10})
	}
	opt, sched := build()
	for range 30 {
		sched.Step()
	}
	optState, schedState := opt.StateDict(), sched.StateDict()
	sched.Step()
	want := sched.LastLR()[0]

	opt2, sched2 := build() // the resumed process
	if err := opt2.LoadStateDict(optState); err != nil {
		panic(err)
	}
	if err := sched2.LoadStateDict(schedState); err != nil {
		panic(err)
	}
	sched2.Step()
	fmt.Printf("%.6f %v\n", sched2.LastLR()[0], sched2.LastLR()[0] == want)
	// Output:
	// 0.087157 true
}
