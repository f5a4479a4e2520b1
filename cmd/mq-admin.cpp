// mq-admin: manage a store and its queues. Each subcommand is in cmd/admin/.
//
//   mq-admin [--store DIR] COMMAND [options]   (common options may also follow COMMAND)
//   mq-admin help [COMMAND]                    (the overview, or COMMAND's --help)
//
// The command word is found before CLI11 parses, so that a missing or unknown one is named
// with the list of commands (CLI11 would only say "A subcommand is required"), and so that
// `help` needs no parser node of its own.
#include <csignal>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "admin/admin.hpp"

namespace mq {
namespace {

// The index in argv of the first word that is not an option or an option's argument (the
// command word), or argc if there is none.
int CommandWordIndex(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "--") == 0) return i + 1 < argc ? i + 1 : argc;
    if (std::strcmp(a, "-s") == 0 || std::strcmp(a, "--store") == 0) {
      ++i;
      continue;
    }
    if (a[0] == '-' && a[1] != '\0') continue;
    return i;
  }
  return argc;
}

// Whether argv asks for --help or --version before any command word: CLI11 answers those.
bool AsksHelpOrVersion(char** argv, int until) {
  for (int i = 1; i < until; ++i)
    for (const char* f : {"-h", "--help", "--version"})
      if (std::strcmp(argv[i], f) == 0) return true;
  return false;
}

std::string CommandList(const std::vector<admin::Command>& commands) {
  std::string list;
  for (const auto& c : commands) list += (list.empty() ? "" : ", ") + c.app->get_name();
  return list;
}

int Run(int argc, char** argv) {
  cli::SetTool("mq-admin");
  std::signal(SIGPIPE, SIG_IGN);
  admin::Context ctx;
  CLI::App app("Manage an mq store and its queues", "mq-admin");
  cli::AddVersionFlag(app);
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
      admin::SetupBridge(app, ctx), admin::SetupLink(app, ctx), admin::SetupForward(app, ctx),
      admin::SetupAccept(app, ctx),
  };
  app.footer("Run 'mq-admin help COMMAND' (or 'mq-admin COMMAND --help') for a command's "
             "options; the manual is mq-admin(1).");
  auto known = [&](const char* word) {
    for (const auto& c : commands)
      if (c.app->get_name() == word) return true;
    return false;
  };
  auto usage = [&](const std::string& what) {
    return cli::Fail(Status(Code::kInvalidArg,
                            fmt::format("{}; the subcommands are {} (see mq-admin help)", what,
                                        CommandList(commands))));
  };
  int word = CommandWordIndex(argc, argv);
  if (word == argc) {
    if (!AsksHelpOrVersion(argv, argc)) return usage("a subcommand is required");
  } else if (std::strcmp(argv[word], "help") == 0) {
    if (word + 1 >= argc) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    if (word + 2 < argc) return usage("help takes at most one subcommand");
    if (!known(argv[word + 1]))
      return usage(fmt::format("unknown subcommand '{}'", argv[word + 1]));
    char help_flag[] = "--help";
    char* help_argv[] = {argv[0], argv[word + 1], help_flag};
    return cli::Parse(app, 3, help_argv);
  } else if (!known(argv[word]) && !AsksHelpOrVersion(argv, word)) {
    return usage(fmt::format("unknown subcommand '{}'", argv[word]));
  }
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  for (auto& c : commands)
    if (c.app->parsed()) return c.run(ctx);
  return cli::Fail(Status(Code::kInvalidArg, "no command given (see mq-admin --help)"));
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
