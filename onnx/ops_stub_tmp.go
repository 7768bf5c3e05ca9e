package onnx

func nnOps() opTable { return opTable{} }
