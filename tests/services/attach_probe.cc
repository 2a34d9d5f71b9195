// A second process for the loader tests: attaches to a model over gRPC, maps its segment
// read-only and prints a checksum of one tensor; then waits for the attachment to end and
// prints how it ended ("revoked" or "closed"). Revoked, it keeps the weights mapped and the
// lease open until its standard input closes, like an executor finishing its running jobs.
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <iostream>
#include <string>

#include "common/segment/weight_view.h"
#include "unmask/v1/loader.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: attach_probe LOADER_ADDR MODEL_ID EXECUTOR_ID TENSOR\n";
    return 2;
  }
  auto stub = unmask::v1::Loader::NewStub(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  unmask::v1::AttachModelRequest req;
  req.set_model_id(argv[2]);
  req.set_executor_id(argv[3]);
  auto reader = stub->AttachModel(&ctx, req);
  unmask::v1::AttachEvent ev;
  if (!reader->Read(&ev) || ev.kind() != unmask::v1::AttachEvent::ATTACHED) {
    std::cout << "attach failed: " << reader->Finish().error_message() << std::endl;
    return 1;
  }
  auto model = unmask::weights::AttachedModel::Attach(ev.segment_name());
  if (!model.ok()) {
    std::cout << "map failed: " << model.status().ToString() << std::endl;
    return 1;
  }
  auto view = model->Find(argv[4]);
  if (!view.ok()) {
    std::cout << "find failed: " << view.status().ToString() << std::endl;
    return 1;
  }
  std::uint64_t sum = 1469598103934665603ull;  // FNV-1a over the tensor's bytes
  for (std::uint64_t i = 0; i < view->entry->nbytes; ++i) sum = (sum ^ view->data[i]) * 1099511628211ull;
  std::cout << "attached " << ev.segment_name() << " checksum " << sum << std::endl;
  while (reader->Read(&ev)) {
    if (ev.kind() == unmask::v1::AttachEvent::REVOKED) {
      std::cout << "revoked" << std::endl;
      std::string line;
      while (std::getline(std::cin, line)) {
      }
      ctx.TryCancel();
      return 0;
    }
  }
  std::cout << "closed" << std::endl;
  return 0;
}
