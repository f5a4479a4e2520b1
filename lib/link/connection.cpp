// connection.cpp: CommandConnector, the link's command as a Connection (connection.hpp).
#include "link/connection.hpp"

#include "proc/child.hpp"

namespace mq::link {

namespace {

class CommandConnection : public Connection {
 public:
  Status Start(const std::string& via) { return child_.Start(via, "the link's command"); }
  int to() const override { return child_.to(); }
  int from() const override { return child_.from(); }
  void CloseTo() override { child_.CloseTo(); }
  std::string Reap(int64_t wait_ms) override { return child_.Reap(wait_ms); }
  void Stop() override { child_.Stop(); }

 private:
  proc::Child child_;
};

}  // namespace

Result<std::unique_ptr<Connection>> CommandConnector::Connect() {
  auto c = std::make_unique<CommandConnection>();
  MQ_RETURN_IF_ERROR(c->Start(via_));
  return std::unique_ptr<Connection>(std::move(c));
}

}  // namespace mq::link
