package optim_test

import (
	"bytes"
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// Fit y = 2x - 1 with one linear unit and Adam; then save the optimizer's
// state and restore it into a fresh optimizer to resume.
func Example() {
	g := tensor.NewGenerator(1)
	model := nn.NewLinear(g, 1, 1, true, tensor.Float64)
	x := tensor.FromSlice([]float64{-1, 0, 1, 2}, 4, 1)
	y := tensor.FromSlice([]float64{-3, -1, 1, 3}, 4, 1)
	mse := nn.NewMSELoss(nn.ReduceMean)

	opt := optim.NewAdam(model.Parameters(), optim.AdamOptions{LR: 0.1})
	for step := range 300 {
		if step == 200 {
			opt.SetLR(0.01) // a simple schedule
		}
		opt.ZeroGrad()
		loss := mse.Forward(model.Forward(autograd.New(x)), y)
		if err := loss.Backward(); err != nil {
			panic(err)
		}
		if err := opt.Step(); err != nil {
			panic(err)
		}
	}
	fmt.Printf("w=%.3f b=%.3f\n", model.Weight.Value().Item(), model.Bias.Value().Item())

	// Checkpoint the optimizer (nn.SaveTensors writes it to a file).
	var buf bytes.Buffer
	if err := nn.EncodeTensors(&buf, opt.StateDict(), nil); err != nil {
		panic(err)
	}
	state, _, err := nn.DecodeTensors(buf.Bytes())
	if err != nil {
		panic(err)
	}
	resumed := optim.NewAdam(model.Parameters(), optim.AdamOptions{})
	if err := resumed.LoadStateDict(state); err != nil {
		panic(err)
	}
	fmt.Println("lr:", resumed.LR(0), "step:", state["state.0.step"].Item())
	// Output:
	// w=2.000 b=-1.000
	// lr: 0.01 step: 300
}

// Parameter groups give layers their own hyperparameters.
func ExampleSGD_AddParamGroup() {
	g := tensor.NewGenerator(1)
	body := nn.NewLinear(g, 4, 8, true)
	head := nn.NewLinear(g, 8, 2, true)
	opt := optim.NewSGD(body.Parameters(), optim.SGDOptions{LR: 0.01, Momentum: 0.9})
	opt.AddParamGroup(head.Parameters(), optim.SGDOptions{LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4})
	for i := range opt.NumGroups() {
		fmt.Println("group", i, "lr", opt.LR(i))
	}
	// Output:
	// group 0 lr 0.01
	// group 1 lr 0.1
}
