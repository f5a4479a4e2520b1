// mq-admin: manage a store and its queues. Each subcommand is in cmd/admin/.
//
//   mq-admin [--store DIR] COMMAND [options]   (common options may also follow COMMAND)
//   mq-admin GROUP SUBCOMMAND [options]        (the groups: bridge, link, message-type)
//   mq-admin help [COMMAND [SUBCOMMAND]]       (the overview, or that command's --help)
//
// The command word, and a group's subcommand word, are found before CLI11 parses, so that a
// missing or unknown one is named with the list of that level's commands and a pointer to
// its help (CLI11 would only say "A subcommand is required (see mq-admin --help)"), and so
// that `help` needs no parser node of its own.
#include <csignal>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "admin/admin.hpp"
#include "admin/progress.hpp"

namespace mq {
namespace {

// The option of `app` or of one of its parents that `word` (an option word, such as "-s" or
// "--store") names, or null.
const CLI::Option* FindOption(const CLI::App* app, const std::string& word) {
  for (; app; app = app->get_parent())
    if (const CLI::Option* o = app->get_option_no_throw(word)) return o;
  return nullptr;
}

// The index in argv of the first word from `from` on that is not an option or an option's
// argument (the command word, or a group's subcommand word), or argc if there is none. The
// options are those `app` (and its parents) define: one that takes a value, written apart
// from it ("-s DIR", not "-sDIR" or "--store=DIR"), has the next word skipped.
int OperandIndex(const CLI::App& app, int from, int argc, char** argv) {
  for (int i = from; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "--") == 0) return i + 1 < argc ? i + 1 : argc;
    if (a[0] != '-' || a[1] == '\0') return i;
    bool attached = std::strchr(a, '=') != nullptr || (a[1] != '-' && a[2] != '\0');
    const CLI::Option* o = attached ? nullptr : FindOption(&app, a);
    if (o && o->get_expected_min() > 0) ++i;
  }
  return argc;
}

// Whether argv[from, until) asks for --help or --version: CLI11 answers those.
bool AsksHelpOrVersion(char** argv, int from, int until) {
  for (int i = from; i < until; ++i)
    for (const char* f : {"-h", "--help", "--version"})
      if (std::strcmp(argv[i], f) == 0) return true;
  return false;
}

// The subcommands of `app` (mq-admin's commands, or a group's), as "a, b, c".
std::string SubcommandList(const CLI::App& app) {
  std::string list;
  for (const CLI::App* c : app.get_subcommands({}))
    list += (list.empty() ? "" : ", ") + c->get_name();
  return list;
}

// The subcommand of `app` named `word`, or null.
const CLI::App* FindSubcommand(const CLI::App& app, const char* word) {
  for (const CLI::App* c : app.get_subcommands({}))
    if (c->get_name() == word) return c;
  return nullptr;
}

// A usage error about the subcommand word of `group` (a command group, or mq-admin itself):
// `what` happened; the group's subcommands are listed, with where its help is.
int SubcommandUsage(const CLI::App& group, const std::string& what) {
  if (!group.get_parent())
    return cli::Fail(
        Status::InvalidArg(fmt::format("{}; the subcommands are {} (see mq-admin help)", what,
                                       SubcommandList(group))));
  const std::string& name = group.get_name();
  return cli::Fail(
      Status::InvalidArg(fmt::format("{}; the {} subcommands are {} (see mq-admin {} --help)", what,
                                     name, SubcommandList(group), name)));
}

// The words of a subcommand of `group` in argv: a missing or unknown one is a usage error
// (its status returned), unless --help or --version is asked for before it; -1 if fine.
int CheckSubcommandWord(const CLI::App& group, int from, int argc, char** argv) {
  std::string level = group.get_parent() ? group.get_name() + " " : "";
  int word = OperandIndex(group, from, argc, argv);
  if (AsksHelpOrVersion(argv, from, word)) return -1;
  if (word == argc)
    return SubcommandUsage(group, fmt::format("a {}subcommand is required", level));
  const CLI::App* sub = FindSubcommand(group, argv[word]);
  if (!sub)
    return SubcommandUsage(group,
                           fmt::format("unknown {}subcommand '{}'", level, argv[word]));
  if (sub->get_subcommands({}).empty()) return -1;
  return CheckSubcommandWord(*sub, word + 1, argc, argv);
}

// `mq-admin help WORD...` (argv[from] on): the overview, or the --help of the command the
// words name (`help link`, `help link add`).
int Help(CLI::App& app, int from, int argc, char** argv) {
  if (from >= argc) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  std::vector<char*> help_argv = {argv[0]};
  const CLI::App* level = &app;
  std::string path;
  for (int i = from; i < argc; ++i) {
    if (level->get_subcommands({}).empty())
      return cli::Fail(Status::InvalidArg(
          fmt::format("help: '{}' has no subcommands (see mq-admin help {})", path, path)));
    const CLI::App* sub = FindSubcommand(*level, argv[i]);
    if (!sub)
      return SubcommandUsage(*level, fmt::format("unknown {}subcommand '{}'",
                                                 path.empty() ? "" : path + " ", argv[i]));
    help_argv.push_back(argv[i]);
    path += (path.empty() ? "" : " ") + sub->get_name();
    level = sub;
  }
  char help_flag[] = "--help";
  help_argv.push_back(help_flag);
  return cli::Parse(app, static_cast<int>(help_argv.size()), help_argv.data());
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
  admin::AddQuietOption(app, ctx.quiet, true);
  std::vector<admin::Command> commands = {
      admin::SetupInit(app, ctx),
      admin::SetupCreate(app, ctx),
      admin::SetupSet(app, ctx),
      admin::SetupDelete(app, ctx),
      admin::SetupList(app, ctx),
      admin::SetupStat(app, ctx),
      admin::SetupTop(app, ctx),
      admin::SetupPurge(app, ctx),
      admin::SetupCheck(app, ctx),
      admin::SetupBackup(app, ctx),
      admin::SetupCompact(app, ctx),
      admin::SetupUpgrade(app, ctx),
      admin::SetupExport(app, ctx),
      admin::SetupImport(app, ctx),
      admin::SetupCursors(app, ctx),
      admin::SetupDeleteCursor(app, ctx),
      admin::SetupSweep(app, ctx),
      admin::SetupAck(app, ctx),
      admin::SetupNack(app, ctx),
      admin::SetupTouch(app, ctx),
      admin::SetupLocks(app, ctx),
      admin::SetupRequeue(app, ctx),
      admin::SetupMove(app, ctx),
      admin::SetupMessageType(app, ctx),
      admin::SetupEndConversation(app, ctx),
      admin::SetupConversations(app, ctx),
      admin::SetupBridge(app, ctx),
      admin::SetupLink(app, ctx),
      admin::SetupForward(app, ctx),
      admin::SetupAccept(app, ctx),
      admin::SetupServe(app, ctx),
  };
  app.footer("Run 'mq-admin help COMMAND' (or 'mq-admin COMMAND --help') for a command's "
             "options; the manual is mq-admin(1).");
  int word = OperandIndex(app, 1, argc, argv);
  if (word < argc && std::strcmp(argv[word], "help") == 0) return Help(app, word + 1, argc, argv);
  if (int rc = CheckSubcommandWord(app, 1, argc, argv); rc >= 0) return rc;
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  for (auto& c : commands)
    if (c.app->parsed()) return c.run(ctx);
  return cli::Fail(Status::InvalidArg("no command given (see mq-admin --help)"));
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
