// keyflow-kafka-mock: a Kafka cluster for tests, demos and trying keyflow's Kafka connectors on
// a machine without Kafka: librdkafka's own mock cluster (rdkafka_mock.h) in its own process,
// reachable over TCP on 127.0.0.1 like a real broker (produce, fetch, idempotent and
// transactional producers, consumer groups with offset commits, metadata).
//
// It prints one line "bootstrap=HOST:PORT[,HOST:PORT...]" on stdout once the brokers listen
// (and writes the same value to --bootstrap-file), then reads commands on stdin (and from the
// FIFO --commands names), one per line, answering "ok" or "error: <reason>" on stdout:
//   create-topic TOPIC PARTITIONS      a topic (replication factor 1)
//   broker-down ID | broker-up ID      a broker stops / resumes answering (1-based ids)
//   leader TOPIC PARTITION BROKER_ID   moves a partition's leader
//   exit                               shuts down (as do SIGINT and SIGTERM; the end of stdin
//                                      only ends the commands)
//
// What the mock does not do like Kafka (measured with librdkafka 2.0.2): it never hides an open
// transaction's records from read_committed consumers (no last stable offset), and it keeps
// about 5 MB (100 k batches) per partition, trimming older data.
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/version.h"

namespace {

namespace po = boost::program_options;

volatile sig_atomic_t g_stop = 0;  // set by SIGINT/SIGTERM; read by the command loop
void OnSignal(int) {
  g_stop = 1;
}

struct KafkaHandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
struct MockClusterDeleter {
  void operator()(rd_kafka_mock_cluster_t* c) const { rd_kafka_mock_cluster_destroy(c); }
};

std::string ErrorText(rd_kafka_resp_err_t err) {
  return rd_kafka_err2str(err);
}

// Runs one command line; returns the answer line.
std::string RunCommand(rd_kafka_mock_cluster_t* cluster, const std::string& line, bool* exit) {
  std::istringstream in(line);
  std::string verb;
  in >> verb;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (verb == "create-topic") {
    std::string topic;
    int partitions = 0;
    if (!(in >> topic >> partitions) || partitions <= 0) {
      return "error: usage: create-topic TOPIC PARTITIONS (PARTITIONS > 0)";
    }
    err = rd_kafka_mock_topic_create(cluster, topic.c_str(), partitions, 1);
  } else if (verb == "broker-down" || verb == "broker-up") {
    int32_t id = 0;
    if (!(in >> id)) return "error: usage: " + verb + " BROKER_ID";
    err = verb == "broker-down" ? rd_kafka_mock_broker_set_down(cluster, id)
                                : rd_kafka_mock_broker_set_up(cluster, id);
  } else if (verb == "leader") {
    std::string topic;
    int32_t partition = 0, broker = 0;
    if (!(in >> topic >> partition >> broker)) {
      return "error: usage: leader TOPIC PARTITION BROKER_ID";
    }
    err = rd_kafka_mock_partition_set_leader(cluster, topic.c_str(), partition, broker);
  } else if (verb == "exit") {
    *exit = true;
    return "ok";
  } else if (verb.empty()) {
    return "error: empty command";
  } else {
    return "error: unknown command '" + verb +
           "' (create-topic, broker-down, broker-up, leader, exit)";
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return "error: " + ErrorText(err);
  return "ok";
}

}  // namespace

int main(int argc, char** argv) {
  int brokers = 1;
  std::string bootstrap_file;
  std::vector<std::string> topics;
  std::vector<std::string> missing_topics;
  std::string commands_path;
  po::options_description options("keyflow-kafka-mock options");
  options.add_options()("help,h", "print this help and exit")("version",
                                                              "print the version and exit")(
      "brokers", po::value<int>(&brokers)->default_value(1), "number of brokers (1-9)")(
      "bootstrap-file", po::value<std::string>(&bootstrap_file),
      "also write the bootstrap servers to this file (written whole, then renamed)")(
      "topic", po::value<std::vector<std::string>>(&topics)->composing(),
      "create TOPIC:PARTITIONS at start (repeatable)")(
      "missing-topic", po::value<std::vector<std::string>>(&missing_topics)->composing(),
      "answer metadata requests for TOPIC with 'unknown topic or partition' (repeatable): the "
      "mock otherwise creates every topic a client asks about, which a Kafka broker does not "
      "do for consumers")(
      "commands", po::value<std::string>(&commands_path),
      "also read commands from this FIFO (created if missing), one per line; the answers go to "
      "stdout: how a test or a script drives a mock whose stdin it does not hold");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "keyflow-kafka-mock: " << e.what() << " (try --help)\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << "Usage: keyflow-kafka-mock [options]\n"
                 "A Kafka cluster for tests: librdkafka's mock cluster on 127.0.0.1. Prints\n"
                 "bootstrap=HOST:PORT[,...], then reads commands on stdin: create-topic TOPIC N,\n"
                 "broker-down ID, broker-up ID, leader TOPIC PARTITION BROKER_ID, exit.\n\n"
              << options;
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "keyflow-kafka-mock " << keyflow::kKeyflowVersion << " (git "
              << keyflow::kKeyflowGitRevision << ", librdkafka " << rd_kafka_version_str() << ")\n";
    return 0;
  }
  if (brokers < 1 || brokers > 9) {
    std::cerr << "keyflow-kafka-mock: --brokers must be between 1 and 9, not " << brokers << "\n";
    return 2;
  }
  struct TopicArg {
    std::string name;
    int partitions;
  };
  std::vector<TopicArg> create;
  for (const std::string& t : topics) {
    size_t colon = t.rfind(':');
    int n = 0;
    if (colon == std::string::npos || colon == 0 ||
        std::sscanf(t.c_str() + colon + 1, "%d", &n) != 1 || n <= 0) {
      std::cerr << "keyflow-kafka-mock: --topic wants TOPIC:PARTITIONS (PARTITIONS > 0), not '" << t
                << "'\n";
      return 2;
    }
    create.push_back({t.substr(0, colon), n});
  }

  // The mock cluster lives inside a client handle; it serves TCP on its own threads.
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    std::cerr << "keyflow-kafka-mock: " << errstr << "\n";
    return 1;
  }
  std::unique_ptr<rd_kafka_t, KafkaHandleDeleter> handle(
      rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr));
  if (!handle) {
    std::cerr << "keyflow-kafka-mock: cannot create the client that hosts the cluster: " << errstr
              << "\n";
    return 1;
  }
  std::unique_ptr<rd_kafka_mock_cluster_t, MockClusterDeleter> cluster(
      rd_kafka_mock_cluster_new(handle.get(), brokers));
  if (!cluster) {
    std::cerr << "keyflow-kafka-mock: cannot start the mock cluster\n";
    return 1;
  }
  for (const TopicArg& t : create) {
    rd_kafka_resp_err_t err =
        rd_kafka_mock_topic_create(cluster.get(), t.name.c_str(), t.partitions, 1);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::cerr << "keyflow-kafka-mock: cannot create topic '" << t.name << "': " << ErrorText(err)
                << "\n";
      return 1;
    }
  }
  for (const std::string& topic : missing_topics) {
    rd_kafka_mock_topic_set_error(cluster.get(), topic.c_str(),
                                  RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  }
  const std::string bootstrap = rd_kafka_mock_cluster_bootstraps(cluster.get());
  if (!bootstrap_file.empty()) {
    const std::string tmp = bootstrap_file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << bootstrap << "\n";
      if (!out.good()) {
        std::cerr << "keyflow-kafka-mock: cannot write " << tmp << ": " << std::strerror(errno)
                  << "\n";
        return 1;
      }
    }
    if (std::rename(tmp.c_str(), bootstrap_file.c_str()) != 0) {
      std::cerr << "keyflow-kafka-mock: cannot rename " << tmp << " to " << bootstrap_file << ": "
                << std::strerror(errno) << "\n";
      return 1;
    }
  }
  std::cout << "bootstrap=" << bootstrap << std::endl;

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Commands from stdin and the --commands FIFO, polled so that a signal ends the process
  // promptly. The FIFO is opened read-write: writers may come and go without an end of file.
  int commands_fd = -1;
  if (!commands_path.empty()) {
    if (::mkfifo(commands_path.c_str(), 0600) != 0 && errno != EEXIST) {
      std::cerr << "keyflow-kafka-mock: cannot create the FIFO " << commands_path << ": "
                << std::strerror(errno) << "\n";
      return 1;
    }
    commands_fd = ::open(commands_path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (commands_fd < 0) {
      std::cerr << "keyflow-kafka-mock: cannot open the FIFO " << commands_path << ": "
                << std::strerror(errno) << "\n";
      return 1;
    }
  }
  std::string pending[2];
  bool exit = false;
  bool stdin_open = true;
  while (!exit && !g_stop) {
    pollfd pfd[2] = {{stdin_open ? STDIN_FILENO : -1, POLLIN, 0}, {commands_fd, POLLIN, 0}};
    int ready = ::poll(pfd, 2, 200);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    for (int i = 0; i < 2 && !exit; ++i) {
      if ((pfd[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buf[4096];
      ssize_t n = ::read(pfd[i].fd, buf, sizeof buf);
      if (n < 0) continue;  // EINTR, EAGAIN
      if (n == 0) {         // end of stdin (e.g. /dev/null): serve until a signal
        if (i == 0) stdin_open = false;
        continue;
      }
      pending[i].append(buf, static_cast<size_t>(n));
      size_t nl;
      while (!exit && (nl = pending[i].find('\n')) != std::string::npos) {
        std::string line = pending[i].substr(0, nl);
        pending[i].erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::cout << RunCommand(cluster.get(), line, &exit) << std::endl;
      }
    }
  }
  if (commands_fd >= 0) ::close(commands_fd);
  return 0;
}
