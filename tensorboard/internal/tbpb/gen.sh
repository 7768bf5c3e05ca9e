#!/bin/sh
# Regenerates the Go code of TensorBoard's .proto files (copied unchanged
# from github.com/tensorflow/tensorboard, Apache License 2.0) with Debian's
# protoc and protoc-gen-go v1.36.11:
#   apt-get install -y protobuf-compiler
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
# Run through "go generate ./tensorboard/internal/tbpb".
set -eu
cd "$(dirname "$0")"
mod=github.com/emberml/ember/tensorboard/internal/tbpb
maps=""
for f in $(cd proto && find tensorboard -name '*.proto' | sort); do
	case "$f" in
	tensorboard/plugins/hparams/*) pkg="$mod/hparamspb;hparamspb" ;;
	tensorboard/plugins/projector/*) pkg="$mod/projectorpb;projectorpb" ;;
	tensorboard/plugins/pr_curve/*) pkg="$mod/prcurvepb;prcurvepb" ;;
	tensorboard/plugins/text/*) pkg="$mod/textpb;textpb" ;;
	*) pkg="$mod;tbpb" ;;
	esac
	maps="$maps --go_opt=M$f=$pkg"
done
rm -f ./*.pb.go ./*/*.pb.go
# shellcheck disable=SC2086
protoc -Iproto --go_out=. --go_opt=module=$mod $maps $(cd proto && find tensorboard -name '*.proto' | sort)
