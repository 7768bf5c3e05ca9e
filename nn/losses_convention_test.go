package nn_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/nn"
)

// TestLossTargetConvention pins the convention of the nn package doc:
// every loss takes what the model computed as *autograd.Var and its target
// as *tensor.Tensor, regression losses included.
func TestLossTargetConvention(t *testing.T) {
	const (
		inputTarget      = "func(*autograd.Var, *tensor.Tensor) *autograd.Var"
		pairTarget       = "func(*autograd.Var, *autograd.Var, *tensor.Tensor) *autograd.Var"
		tripletNoTarget  = "func(*autograd.Var, *autograd.Var, *autograd.Var) *autograd.Var"
		gaussianVariance = "func(*autograd.Var, *tensor.Tensor, *autograd.Var) *autograd.Var"
		ctcLengths       = "func(*autograd.Var, *tensor.Tensor, *tensor.Tensor, *tensor.Tensor) *autograd.Var"
	)
	for name, tc := range map[string]struct {
		forward any
		want    string
	}{
		"MSELoss":                       {nn.NewMSELoss(nn.ReduceMean).Forward, inputTarget},
		"L1Loss":                        {nn.NewL1Loss(nn.ReduceMean).Forward, inputTarget},
		"SmoothL1Loss":                  {nn.NewSmoothL1Loss().Forward, inputTarget},
		"HuberLoss":                     {nn.NewHuberLoss().Forward, inputTarget},
		"KLDivLoss":                     {nn.NewKLDivLoss(nn.ReduceMean, false).Forward, inputTarget},
		"PoissonNLLLoss":                {nn.NewPoissonNLLLoss().Forward, inputTarget},
		"GaussianNLLLoss":               {nn.NewGaussianNLLLoss().Forward, gaussianVariance},
		"CrossEntropyLoss":              {nn.NewCrossEntropyLoss().Forward, inputTarget},
		"NLLLoss":                       {nn.NewNLLLoss().Forward, inputTarget},
		"BCELoss":                       {nn.NewBCELoss(nn.ReduceMean).Forward, inputTarget},
		"BCEWithLogitsLoss":             {nn.NewBCEWithLogitsLoss(nn.ReduceMean).Forward, inputTarget},
		"FocalLoss":                     {nn.NewFocalLoss().Forward, inputTarget},
		"DiceLoss":                      {nn.NewDiceLoss().Forward, inputTarget},
		"HingeEmbeddingLoss":            {nn.NewHingeEmbeddingLoss().Forward, inputTarget},
		"SoftMarginLoss":                {nn.NewSoftMarginLoss(nn.ReduceMean).Forward, inputTarget},
		"MultiLabelMarginLoss":          {nn.NewMultiLabelMarginLoss(nn.ReduceMean).Forward, inputTarget},
		"MultiLabelSoftMarginLoss":      {nn.NewMultiLabelSoftMarginLoss(nn.ReduceMean).Forward, inputTarget},
		"MultiMarginLoss":               {nn.NewMultiMarginLoss().Forward, inputTarget},
		"MarginRankingLoss":             {nn.NewMarginRankingLoss(0, nn.ReduceMean).Forward, pairTarget},
		"CosineEmbeddingLoss":           {nn.NewCosineEmbeddingLoss(0, nn.ReduceMean).Forward, pairTarget},
		"TripletMarginLoss":             {nn.NewTripletMarginLoss().Forward, tripletNoTarget},
		"TripletMarginWithDistanceLoss": {nn.NewTripletMarginWithDistanceLoss().Forward, tripletNoTarget},
		"CTCLoss":                       {nn.NewCTCLoss().Forward, ctcLengths},
	} {
		assert.Equal(t, tc.want, reflect.TypeOf(tc.forward).String(), name)
	}
}
