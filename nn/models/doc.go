// Package models is a zoo of ready-made networks whose state dicts use the
// parameter and buffer names of their PyTorch / torchvision counterparts, so a
// state dict saved by torch (as safetensors) loads directly with
// nn.LoadSafetensors and gives the same outputs.
//
// The torchvision architectures follow torchvision's own layout and
// initialization:
//
//   - ResNet18, ResNet34, ResNet50: torchvision.models.resnet18/34/50
//     (conv1, bn1, layer1.0.conv1, ..., layerN.0.downsample.0/1, fc).
//   - VGG11, VGG16, with VGGConfig.BatchNorm their batch-norm variants:
//     torchvision.models.vgg11/vgg16(_bn) (features.N, classifier.N).
//   - NewMobileNetV2: torchvision.models.mobilenet_v2 (features.N.conv...,
//     classifier.1).
//   - NewMLP: torchvision.ops.MLP (Linear layers at indices 0, 3, 6, ...).
//
// The other models have no torchvision equivalent; their names are defined
// in their documentation and mirrored by the PyTorch reference modules in
// internal/golden/gen/gen_models.py:
//
//   - NewLeNet5: the classic LeNet-5 layout (conv1, conv2, fc1, fc2, fc3).
//   - NewGRUClassifier: embedding, GRU and linear head (embedding, gru,
//     fc).
//   - NewGPT: a pre-norm causal transformer decoder (wte, wpe, h.N..., ln_f,
//     lm_head).
//
// Every constructor draws its initial weights from an explicit
// *tensor.Generator and takes a config struct whose zero fields mean the
// reference implementation's defaults. All parameters are Float32.
//
// Loading torchvision weights (saved as safetensors, for example with
// safetensors.torch.save_file(model.state_dict(), path)):
//
//	m := models.ResNet18(tensor.NewGenerator(0), models.ResNetConfig{})
//	if err := nn.LoadSafetensors("resnet18.safetensors", m); err != nil {
//		return err
//	}
//	m.Train(false)
//	logits := m.Forward(autograd.New(images)) // images: [N, 3, H, W]
//
// ExampleResNet18 builds a ResNet-18 and runs an image through it;
// ExampleNewGPT builds a GPT with a tied head and reads its logits.
package models
