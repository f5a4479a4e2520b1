// mq-admin: manage a store and its queues. Each subcommand is in cmd/admin/.
//
//   mq-admin [--store DIR] COMMAND [options]   (common options may also follow COMMAND)
#include <csignal>

#include "admin/admin.hpp"

namespace mq {
namespace {

int Run(int argc, char** argv) {
  cli::SetTool("mq-admin");
  std::signal(SIGPIPE, SIG_IGN);
  admin::Context ctx;
  CLI::App app("Manage an mq store and its queues", "mq-admin");
  app.set_version_flag("--version", MQ_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  cli::AddStoreOption(app, ctx.store);
  std::vector<admin::Command> commands = {
      admin::SetupInit(app, ctx),   admin::SetupCreate(app, ctx), admin::SetupSet(app, ctx),
      admin::SetupDelete(app, ctx), admin::SetupList(app, ctx),   admin::SetupStat(app, ctx),
      admin::SetupPurge(app, ctx),  admin::SetupCheck(app, ctx),  admin::SetupBackup(app, ctx),
      admin::SetupCompact(app, ctx),
      admin::SetupExport(app, ctx), admin::SetupImport(app, ctx),  admin::SetupCursors(app, ctx),
      admin::SetupDeleteCursor(app, ctx), admin::SetupSweep(app, ctx), admin::SetupAck(app, ctx),
      admin::SetupNack(app, ctx), admin::SetupLocks(app, ctx), admin::SetupRequeue(app, ctx),
      admin::SetupMove(app, ctx), admin::SetupMessageType(app, ctx),
      admin::SetupEndConversation(app, ctx), admin::SetupConversations(app, ctx),
      admin::SetupBridge(app, ctx),
  };
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  for (auto& c : commands)
    if (c.app->parsed()) return c.run(ctx);
  return cli::Fail(Status(Code::kInvalidArg, "no command given (see mq-admin --help)"));
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
