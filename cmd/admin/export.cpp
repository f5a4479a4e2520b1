// mq-admin export QUEUE [--format json|srmp]: every message of a queue, delayed and Locked
//   ones included, in arrival order (so that an import gives the same order), without removing
//   anything: as JSON lines (all properties and the body), or as SRMP documents (srmp.hpp), one
//   HTTP POST request per message as MSMQ sends them, each ending with its closing MIME
//   boundary line, the next beginning on the following line.
#include <fmt/format.h>

#include "admin.hpp"
#include "output/format.hpp"
#include "progress.hpp"
#include "wire/srmp.hpp"

namespace mq::admin {

namespace {

// Passes messages on to the output, counting them for the summary and progress lines.
class CountingSink : public MessageSink {
 public:
  CountingSink(MessageSink& out, Progress& progress) : out_(out), progress_(progress) {}
  Status Add(const Message& m) override {
    progress_.messages++;
    progress_.bytes += m.body.size();
    return out_.Add(m);
  }
  Status Flush() override { return out_.Flush(); }
  Status Taken() override { return out_.Taken(); }

 private:
  MessageSink& out_;
  Progress& progress_;
};

// Writes each message as an SRMP document in an HTTP request (SrmpHttpRequest).
class SrmpSink : public MessageSink {
 public:
  explicit SrmpSink(std::string queue) : queue_(std::move(queue)) {}
  Status Add(const Message& m) override {
    out_.Append(SrmpHttpRequest(EncodeSrmp(m), queue_));
    return out_.buffered() >= (1u << 20) ? out_.Flush() : Status();
  }
  Status Flush() override { return out_.Flush(); }

 private:
  std::string queue_;
  FdWriter out_{1, "stdout"};
};

}  // namespace

Command SetupExport(CLI::App& app, Context& ctx) {
  struct Args {
    std::string queue;
    std::string format = "json";
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "export", "Print every message of a queue as JSON lines or SRMP documents");
  sub->add_option("QUEUE", args->queue, "Queue, subqueue or journal")->required();
  sub->add_option("--format", args->format, "Output format: json (default) or srmp")
      ->type_name("NAME")
      ->check(CLI::IsMember({"json", "srmp"}));
  AddQuietOption(*sub, ctx.quiet);
  return {sub, [args](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            Selection all;
            all.anchor = Anchor::kArrival;  // every message, delayed and Locked ones too
            all.limit = 0;
            Progress progress("export " + ref->Full(), ctx.quiet);
            Status s;
            if (args->format == "srmp") {
              SrmpSink sink(ref->Full());
              CountingSink counting(sink, progress);
              s = (*store)->Peek(*ref, all, {}, counting);
            } else {
              cli::OutputArgs out;
              out.json = true;
              auto sink = cli::OutputSink::Make(out);
              if (!sink.ok()) return cli::Fail(sink.status());
              CountingSink counting(**sink, progress);
              s = (*store)->Peek(*ref, all, {}, counting);
            }
            if (s.ok() || s.code() == Code::kMessageNotFound) {
              progress.Done(ref->Full(), fmt::format("exported {}, {} of bodies",
                                                     Messages(progress.messages.load()),
                                                     HumanBytes(progress.bytes.load())));
              return 0;
            }
            if (s.code() == Code::kBrokenPipe) return 0;
            return cli::Fail(s.WithSubject(ref->Full()));
          }};
}

}  // namespace mq::admin
