#include "services/scheduler/http/http_server.h"

#include <httplib.h>

#include "services/scheduler/http/bounded_task_queue.h"
#include "services/scheduler/http/http_errors.h"
#include "services/scheduler/http/logprobs_render.h"
#include "services/common/ssl_context.h"
#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;

constexpr char kJson[] = "application/json";

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(DumpJson(body), kJson);
}

void SendError(httplib::Response& res, const Status& status) {
  const HttpError e = ToHttpError(status);
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  SendJson(res, e.status, e.body);
}

// Runs a handler; anything it throws becomes a 500 here and nowhere else.
template <typename Fn>
void Guarded(httplib::Response& res, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    SendError(res, InternalError(std::string("scheduler: ") + e.what()));
  }
}

// POST /v1/chat/completions and /v1/completions: the key, the body, the request, then the
// answer at once or as a stream of server-sent events.
void HandleCompletion(CompletionService& service, Endpoint endpoint, const httplib::Request& req,
                      httplib::Response& res) {
  // The key first: a caller without one learns nothing about the request.
  auto caller = service.Authenticate(req.get_header_value("Authorization"));
  if (!caller.ok()) return SendError(res, caller.status());
  auto body = ParseJsonBody(req.body);
  if (!body.ok()) return SendError(res, body.status());
  auto parsed = ParseOpenAiRequest(endpoint, *body);
  if (!parsed.ok()) return SendError(res, parsed.status());
  CallInfo call;
  call.client = req.remote_addr;
  auto accepted = service.Accept(*parsed, req.get_header_value("traceparent"), *caller, call);
  if (!accepted.ok()) return SendError(res, accepted.status());
  res.set_header("X-Unmask-Job-Id", accepted->submitted.job_id());
  res.set_header("X-Unmask-Clamped", ClampedHeader(accepted->submitted.accepted()));
  if (!parsed->stream) {
    auto response = service.Complete(*accepted);
    if (!response.ok()) return SendError(res, response.status());
    return SendJson(res, 200, *response);
  }
  // The stream runs on this request's thread once httplib has sent the headers.
  auto job = std::make_shared<AcceptedCompletion>(std::move(*accepted));
  auto started = std::make_shared<bool>(false);
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&service, job, started](std::size_t, httplib::DataSink& sink) {
        *started = true;
        try {
          service.Stream(*job, [&sink](const std::string& event) { return sink.write(event.data(), event.size()); });
        } catch (const std::exception& e) {  // no handler throws: the stream ends with the error
          const std::string event = SseData(ToHttpError(InternalError(std::string("scheduler: ") + e.what())).body);
          sink.write(event.data(), event.size());
        }
        sink.done();
        return true;
      },
      [&service, job, started](bool) {
        if (!*started) service.Cancel(*job);  // the client left before the stream began
      });
}

// What httplib answers by itself (413 for a body over the limit, 404 for an unknown path), as an
// OpenAI error object.
httplib::Server::HandlerResponse HandleError(std::size_t max_body_bytes, const httplib::Request& req,
                                             httplib::Response& res) {
  if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
  json body;
  if (res.status == 413) {
    body = OpenAiErrorBody("the request body is larger than " + std::to_string(max_body_bytes) +
                               " bytes (the scheduler's --http-max-body-bytes)",
                           "invalid_request_error", nullptr, "request_too_large");
  } else if (res.status == 404) {
    body = OpenAiErrorBody("no such endpoint: " + req.method + " " + req.path +
                               " (unmask serves GET /v1/models, POST /v1/chat/completions, POST /v1/completions)",
                           "invalid_request_error", nullptr, "unknown_url");
  } else {
    body = OpenAiErrorBody("HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.path,
                           "invalid_request_error", nullptr, "");
  }
  res.set_content(body.dump(), kJson);
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

OpenAiHttpServer::OpenAiHttpServer(CompletionService& service, HttpServerOptions options)
    : service_(service), options_(std::move(options)) {
  if (!options_.tls) {
    server_ = std::make_unique<httplib::Server>();
    return;
  }
  if (options_.tls->files.refresh_seconds > 0)
    reloading_ = std::make_unique<tls::ReloadingCertificate>(*options_.tls, "unmask-scheduler: the HTTP API");
  server_ = std::make_unique<httplib::SSLServer>([this](SSL_CTX& ctx) {
    tls_status_ = tls::ConfigureServerContext(ctx, *options_.tls, reloading_.get());
    return tls_status_.ok();
  });
}

OpenAiHttpServer::~OpenAiHttpServer() { Stop(); }

void OpenAiHttpServer::Route() {
  httplib::Server& s = *server_;
  const int threads = std::max(1, options_.threads);
  s.new_task_queue = [threads] { return new BoundedTaskQueue(static_cast<std::size_t>(threads)); };
  // A connection that found every thread busy: 429 at once, never a wait in an unbounded queue.
  s.set_pre_routing_handler([threads](const httplib::Request&, httplib::Response& res) {
    if (!BoundedTaskQueue::Overflowing()) return httplib::Server::HandlerResponse::Unhandled;
    SendError(res, QueueFullError("the HTTP server is serving its --http-threads=" + std::to_string(threads) +
                                      " requests at once; try again later",
                                  threads));
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  s.set_payload_max_length(options_.max_body_bytes);
  // Headers, body and SSE chunks go out as separate small writes: with Nagle's algorithm each
  // one after the first waits for the peer's delayed ACK (~40 ms on Linux) on a kept-alive
  // connection. bench_http_api measured GET /v1/models at 43 ms p50 before this (its client
  // without TCP_NODELAY too), 0.04 ms after.
  s.set_tcp_nodelay(true);

  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    Guarded(res, [&] {
      auto caller = service_.Authenticate(req.get_header_value("Authorization"));
      if (!caller.ok()) return SendError(res, caller.status());
      SendJson(res, 200, service_.ListModels());
    });
  });

  auto completion = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      Guarded(res, [&] { HandleCompletion(service_, endpoint, req, res); });
    };
  };
  s.Post("/v1/chat/completions", completion(Endpoint::kChatCompletions));
  s.Post("/v1/completions", completion(Endpoint::kCompletions));

  // What httplib answers by itself (413 for a body over the limit, 404 for an unknown path)
  // gets an OpenAI error object too.
  const httplib::Server::HandlerWithResponse on_error = [this](const httplib::Request& req, httplib::Response& res) {
    return HandleError(options_.max_body_bytes, req, res);
  };
  s.set_error_handler(on_error);
}

StatusOr<int> OpenAiHttpServer::Start() {
  if (!server_->is_valid()) {
    return tls_status_.ok() ? InternalError("http: cannot set up the TLS context") : tls_status_;
  }
  Route();
  int port = options_.port;
  if (port == 0) {
    port = server_->bind_to_any_port(options_.host);
  } else if (!server_->bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port <= 0)
    return UnavailableError("http: cannot listen on " + options_.host + ":" + std::to_string(options_.port));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return port;
}

void OpenAiHttpServer::Stop() {
  service_.Shutdown();
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace unmask::scheduler::http
