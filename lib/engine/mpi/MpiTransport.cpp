// The MPI transport (MpiTransport.hpp). Two kinds of traffic, each on its own communicator:
//
//  - control messages (small, point to point, polled with MPI_Iprobe): at load each rank sends
//    every other its JOIN (fingerprint, replicas, collectives) on the runtime's world; at each
//    collective each rank sends every other ARRIVE (the collective's number and kernel), and a
//    rank whose run failed, or that gave up waiting, sends ABORT; an engine destroyed sends
//    LEAVE. So a rank learns who is missing, who differs and who has gone, by deadline.
//  - data, once every rank has arrived at the collective: non-blocking collectives on the
//    engine's own communicator, polled to the deadline. A reduction is cut into one chunk per
//    rank (MPI_Ialltoallv gives each rank every replica's copy of its chunk, which it reduces in
//    replica order; MPI_Iallgatherv shares the reduced chunks), so each byte crosses as in a
//    ring all-reduce and the result is bitwise the in-process one. A broadcast is an
//    MPI_Ibcast; anything else gathers every replica's contribution (MPI_Iallgatherv) and makes
//    the whole from them.
#include "engine/mpi/MpiPlugin.hpp"
#include "engine/mpi/MpiRuntime.hpp"

#include <aspen/Distributed.hpp>
#include <aspen/Error.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>

namespace aspen {

namespace detail {

namespace {

using mpi::Clock;
using mpi::Runtime;

constexpr int kJoinTag = 11, kControlTag = 12;
// The kinds of engine-join message (JoinHeader::giveUp).
constexpr std::uint32_t kJoin = 0, kGiveUp = 1, kConfirm = 2;

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

// "0, 2, 3"
std::string listOf(const std::vector<int> &ranks) {
  std::string out;
  for (int r : ranks)
    out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// A JOIN: a header, then the collectives' lines separated by '\n'.
struct JoinHeader {
  std::uint32_t engine = 0;
  std::uint32_t giveUp = 0; // kJoin, kGiveUp (the sender stopped waiting), kConfirm
  std::uint64_t fingerprint = 0;
  std::uint32_t replicationFactor = 0, firstReplica = 0, localReplicas = 0, pad = 0;
};

struct Joined {
  JoinHeader header;
  std::vector<std::string> schedule;
};

Joined parseJoin(const std::vector<char> &bytes) {
  Joined j;
  std::memcpy(&j.header, bytes.data(), sizeof j.header);
  std::string text(bytes.begin() + sizeof j.header, bytes.end());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    j.schedule.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return j;
}

// The first difference between rank a's and rank b's executables, in words.
std::string differenceOf(int a, const Joined &ja, int b, const Joined &jb) {
  const std::string A = "rank " + std::to_string(a), B = "rank " + std::to_string(b);
  if (ja.header.replicationFactor != jb.header.replicationFactor)
    return A + "'s graph is replicated " + std::to_string(ja.header.replicationFactor) +
           " ways, " + B + "'s " + std::to_string(jb.header.replicationFactor);
  const std::size_t n = std::min(ja.schedule.size(), jb.schedule.size());
  for (std::size_t i = 0; i < n; ++i)
    if (ja.schedule[i] != jb.schedule[i])
      return "their collective #" + std::to_string(i) + " differs: " + A + "'s is " +
             ja.schedule[i] + ", " + B + "'s " + jb.schedule[i];
  if (ja.schedule.size() != jb.schedule.size())
    return A + " has " + std::to_string(ja.schedule.size()) + " collectives, " + B + " " +
           std::to_string(jb.schedule.size()) + "; the first extra is " +
           (ja.schedule.size() > n ? A + "'s " + ja.schedule[n] : B + "'s " + jb.schedule[n]);
  return "their collectives agree (" + std::to_string(n) +
         " each); the programs differ elsewhere (the ranks must load the same graph)";
}

// Every rank's JOIN for engine `engine` (mine at `me`); throws on a timeout or a give-up.
// Every rank's JOIN for engine `engine` (mine at `me`); throws on a timeout or a give-up. Two
// rounds, as at a collective: the JOINs, then, once a rank has them all, its CONFIRM; nobody
// makes the engine's communicator before every CONFIRM is in, so a rank that gave up (and
// sends GIVEUP, which may travel late) never leaves another inside MPI_Comm_idup.
std::vector<Joined> gatherJoins(Runtime &rt, unsigned engine, const std::vector<char> &mine,
                                const MpiJoin &join) {
  const int me = rt.rank(), n = rt.size();
  std::vector<std::optional<Joined>> joins{std::size_t(n)};
  std::vector<bool> confirmed(std::size_t(n), false);
  joins[std::size_t(me)] = parseJoin(mine);
  confirmed[std::size_t(me)] = true;
  std::string gaveUp;
  const auto sendAll = [&](std::uint32_t kind) {
    std::vector<char> bytes = kind == kJoin ? mine
                                            : std::vector<char>(mine.begin(),
                                                                mine.begin() + sizeof(JoinHeader));
    reinterpret_cast<JoinHeader *>(bytes.data())->giveUp = kind;
    auto hold = rt.lock();
    for (int r = 0; r < n; ++r)
      if (r != me)
        rt.post(bytes, r, kJoinTag, rt.world());
  };
  sendAll(kJoin);
  const auto take = [&](int from, const std::vector<char> &bytes) {
    Joined j = parseJoin(bytes);
    if (j.header.engine > engine) // a later engine's: kept for it
      rt.earlyJoins()[{j.header.engine * 4 + j.header.giveUp, from}] = bytes;
    else if (j.header.engine < engine)
      return;
    else if (j.header.giveUp == kGiveUp)
      gaveUp = "rank " + std::to_string(from) + " stopped waiting for the ranks to load it";
    else if (j.header.giveUp == kConfirm)
      confirmed[std::size_t(from)] = true;
    else
      joins[std::size_t(from)] = std::move(j);
  };
  const auto drain = [&] {
    for (auto it = rt.earlyJoins().begin(); it != rt.earlyJoins().end();)
      if (it->first.first / 4 == engine) {
        take(it->first.second, it->second);
        it = rt.earlyJoins().erase(it);
      } else {
        ++it;
      }
    for (;;) {
      int waiting = 0, count = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kJoinTag, rt.world(), &waiting, &status);
      if (!waiting)
        break;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::vector<char> bytes(std::size_t(std::max(count, 0)));
      MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, kJoinTag, rt.world(),
               MPI_STATUS_IGNORE);
      if (bytes.size() >= sizeof(JoinHeader))
        take(status.MPI_SOURCE, bytes);
    }
  };
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(join.timeoutSeconds));
  const std::string what = "Engine::load (rank " + std::to_string(me) + " of " +
                           std::to_string(n) + ", the rank's engine #" + std::to_string(engine) +
                           " over MPI)";
  const auto everyone = [&](const auto &have) {
    return rt.wait(
        [&] {
          drain();
          return !gaveUp.empty() || std::all_of(have.begin(), have.end(), [](const auto &h) {
                   return bool(h);
                 });
        },
        deadline);
  };
  const auto giveUp = [&](const std::string &why) {
    sendAll(kGiveUp);
    throw error(what + ": " + why);
  };
  const auto ranks = [](const std::vector<int> &list) {
    return std::string(list.size() > 1 ? "ranks " : "rank ") + listOf(list);
  };
  if (!everyone(joins)) {
    std::vector<int> seen, missing;
    for (int r = 0; r < n; ++r)
      (joins[std::size_t(r)] ? seen : missing).push_back(r);
    giveUp(ranks(missing) + " did not load this engine within " + seconds(join.timeoutSeconds) +
           " s (engine option aspen.collectives.timeout); " + ranks(seen) + " did");
  }
  if (!gaveUp.empty())
    throw error(what + ": " + gaveUp);
  sendAll(kConfirm);
  if (!everyone(confirmed)) {
    std::vector<int> silent;
    for (int r = 0; r < n; ++r)
      if (!confirmed[std::size_t(r)])
        silent.push_back(r);
    giveUp(ranks(silent) + " loaded this engine but stopped waiting for the others (no "
           "confirmation within " + seconds(join.timeoutSeconds) +
           " s, engine option aspen.collectives.timeout)");
  }
  if (!gaveUp.empty())
    throw error(what + ": " + gaveUp);
  std::vector<Joined> out;
  for (auto &j : joins)
    out.push_back(std::move(*j));
  return out;
}

// Raises, the same on every rank, unless the ranks' replicas tile [0, r) in rank order and
// their executables are the same.
void checkJoins(const std::vector<Joined> &joins, int me) {
  const std::string what = "Engine::load (rank " + std::to_string(me) + " of " +
                           std::to_string(joins.size()) + ")";
  for (std::size_t r = 1; r < joins.size(); ++r)
    if (joins[r].header.fingerprint != joins[0].header.fingerprint)
      throw error(what + ": the ranks loaded different executables: " +
                  differenceOf(0, joins[0], int(r), joins[r]));
  const unsigned replicas = joins[0].header.replicationFactor;
  unsigned next = 0;
  std::string ranges;
  for (std::size_t r = 0; r < joins.size(); ++r) {
    const JoinHeader &h = joins[r].header;
    ranges += (r ? ", rank " : "rank ") + std::to_string(r) + " runs " +
              (h.localReplicas == 1 ? std::to_string(h.firstReplica)
                                    : std::to_string(h.firstReplica) + "-" +
                                          std::to_string(h.firstReplica + h.localReplicas - 1));
    next = next == h.firstReplica ? next + h.localReplicas : ~0u;
  }
  if (next != replicas)
    throw error(what + ": the ranks' replicas must be the graph's " + std::to_string(replicas) +
                ", each run by one rank, in rank order, and " + ranges +
                " (target.firstRuntimeReplica, target.numberRuntimeReplica)");
}

// MPI counts bytes in int.
int bytesCount(std::size_t bytes, const std::string &what) {
  if (bytes > std::size_t(INT_MAX))
    throw runtime_error(what + ": " + std::to_string(bytes) +
                        " bytes in one MPI message; the MPI transport sends at most 2^31 - 1 "
                        "(split the tensor)");
  return int(bytes);
}

class MpiTransport final : public CollectiveTransport {
public:
  MpiTransport(const std::vector<Joined> &joins, MPI_Comm comm, unsigned engine, double timeout)
      : rt_(Runtime::get()), comm_(comm), engine_(engine), me_(rt_.rank()), ranks_(rt_.size()),
        timeout_(timeout), arrivals_(std::size_t(ranks_)), goes_(std::size_t(ranks_)),
        left_(std::size_t(ranks_)),
        aborted_(std::size_t(ranks_)) {
    for (const Joined &j : joins) {
      first_.push_back(j.header.firstReplica);
      count_.push_back(j.header.localReplicas);
    }
    replicas_ = joins[0].header.replicationFactor;
  }
  ~MpiTransport() override;

  const char *name() const override { return "MPI"; }
  collective::Bytes exchange(const CompiledKernel &k, std::uint32_t index,
                             const std::vector<collective::Bytes> &local,
                             Clock::time_point deadline) override;
  bool runsDirectly() const override { return true; }
  unsigned rank() const override { return unsigned(me_); }
  unsigned ranks() const override { return unsigned(ranks_); }
  std::vector<std::uint8_t> shareFromFirst(std::vector<std::uint8_t> bytes,
                                           Clock::time_point deadline) override;
  void arrive(const CompiledKernel &k, std::uint32_t index, Clock::time_point deadline) override {
    begin(k, index, deadline);
  }
  void runDirect(const CompiledKernel &k, std::uint32_t index, const std::uint8_t *data,
                 std::uint8_t *result, Clock::time_point deadline) override;
  void runStarting(unsigned) override;
  void runEnded(const std::string *failure) override;

private:
  // Control messages: {type, kernel, sequence, run, text}.
  enum : std::uint32_t { kArrive = 1, kLeave = 2, kAbort = 3, kGo = 4 };
  struct Control {
    std::uint32_t type = 0, kernel = 0;
    std::uint64_t sequence = 0;
    std::uint32_t run = 0;
    // The engine's number (engines join in the same order on every rank): a message of an
    // engine since destroyed can arrive on this one's communicator (MPI reuses a freed
    // communicator's context, and a last LEAVE or ABORT may still be on its way), and is
    // dropped.
    std::uint32_t engine = 0;
    char text[480] = {};
  };
  void sendAll(std::uint32_t type, std::uint32_t kernel, const std::string &text);
  void drain(); // the control messages that have come, with the lock held
  // The start of every collective: refused on a broken engine, then meet(), then the
  // collective's name for messages, counted.
  std::string begin(const CompiledKernel &k, std::uint32_t index, Clock::time_point deadline);
  // Waits until every rank has arrived at collective #sequence_ (kernel `index`).
  void meet(const CompiledKernel &k, std::uint32_t index, Clock::time_point deadline);
  // Fails the engine: the ranks are told, and every later run is refused.
  [[noreturn]] void fail(const std::string &message);
  void waitFor(MPI_Request &request, const std::string &what, Clock::time_point deadline);
  // The reduction over every replica of the contributions of this rank's (`local`, in replica
  // order), into `whole` (which may be local's only contribution).
  void reduceAcross(const CompiledKernel &k, const std::vector<const std::uint8_t *> &local,
                    std::uint8_t *whole, const std::string &what, Clock::time_point deadline);
  // Every replica's `each` bytes, in replica order, into `all`, from this rank's at `mine`.
  void gatherInto(const std::uint8_t *mine, std::size_t each, std::uint8_t *all,
                  const std::string &what, Clock::time_point deadline);
  collective::Bytes gather(const CompiledKernel &k, const std::vector<collective::Bytes> &local,
                           const std::string &what, Clock::time_point deadline);
  collective::Bytes broadcast(const CompiledKernel &k,
                              const std::vector<collective::Bytes> &local,
                              const std::string &what, Clock::time_point deadline);
  std::string describe(const CompiledKernel &k, std::uint32_t index) const;

  Runtime &rt_;
  MPI_Comm comm_;
  unsigned engine_;
  int me_, ranks_;
  double timeout_;
  unsigned replicas_ = 0;
  std::vector<unsigned> first_, count_; // each rank's replicas
  std::uint64_t sequence_ = 0;          // collectives begun by this engine
  unsigned run_ = 0;                    // runs begun
  std::vector<std::deque<Control>> arrivals_, goes_;
  std::vector<std::string> left_, aborted_;
  std::string broken_;
  collective::Bytes send_, recv_; // kept from one collective to the next
};

MpiTransport::~MpiTransport() {
  try {
    {
      auto hold = rt_.lock();
      if (broken_.empty()) {
        Control c;
        c.type = kLeave;
        c.engine = engine_;
        std::snprintf(c.text, sizeof c.text, "left: its engine was destroyed after %u run%s", run_,
                      run_ == 1 ? "" : "s");
        std::vector<char> bytes(sizeof c);
        std::memcpy(bytes.data(), &c, sizeof c);
        for (int r = 0; r < ranks_; ++r)
          if (r != me_)
            rt_.post(bytes, r, kControlTag, comm_);
      }
    }
    // The LEAVE (or an earlier ABORT) is on its way before the communicator goes.
    rt_.flush(Clock::now() + std::chrono::seconds(1));
    auto hold = rt_.lock();
    MPI_Comm_free(&comm_);
  } catch (...) {
    // A destructor reports nothing: the peers' deadlines name this rank.
  }
}

std::string MpiTransport::describe(const CompiledKernel &k, std::uint32_t index) const {
  return "collective '" + k.name + "' (kernel " + std::to_string(index) + "; the engine's #" +
         std::to_string(sequence_) + ", in its run " + std::to_string(run_) + ") on rank " +
         std::to_string(me_) + " of " + std::to_string(ranks_);
}

void MpiTransport::sendAll(std::uint32_t type, std::uint32_t kernel, const std::string &text) {
  Control c;
  c.type = type;
  c.kernel = kernel;
  c.sequence = sequence_;
  c.run = run_;
  c.engine = engine_;
  std::snprintf(c.text, sizeof c.text, "%s", text.c_str());
  std::vector<char> bytes(sizeof c);
  std::memcpy(bytes.data(), &c, sizeof c);
  for (int r = 0; r < ranks_; ++r)
    if (r != me_)
      rt_.post(bytes, r, kControlTag, comm_);
}

void MpiTransport::drain() {
  for (;;) {
    int waiting = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kControlTag, comm_, &waiting, &status);
    if (!waiting)
      return;
    Control c;
    MPI_Recv(&c, int(sizeof c), MPI_BYTE, status.MPI_SOURCE, kControlTag, comm_,
             MPI_STATUS_IGNORE);
    c.text[sizeof c.text - 1] = 0;
    if (c.engine != engine_)
      continue; // an earlier engine's, late
    const std::size_t from = std::size_t(status.MPI_SOURCE);
    if (c.type == kArrive)
      arrivals_[from].push_back(c);
    else if (c.type == kGo)
      goes_[from].push_back(c);
    else if (c.type == kLeave)
      left_[from] = c.text;
    else if (aborted_[from].empty())
      aborted_[from] = c.text;
  }
}

void MpiTransport::fail(const std::string &message) {
  if (broken_.empty()) {
    broken_ = message;
    auto hold = rt_.lock();
    sendAll(kAbort, 0, "rank " + std::to_string(me_) + " gave up: " + message);
  }
  throw runtime_error(message);
}

void MpiTransport::runStarting(unsigned) {
  if (!broken_.empty())
    throw runtime_error("this engine's ranks are out of step since: " + broken_ +
                        "; it refuses further runs (make a new engine on every rank)");
  ++run_;
}

void MpiTransport::runEnded(const std::string *failure) {
  if (failure && broken_.empty()) {
    broken_ = "rank " + std::to_string(me_) + "'s run " + std::to_string(run_) +
              " failed: " + *failure;
    auto hold = rt_.lock();
    sendAll(kAbort, 0, broken_);
  }
}

void MpiTransport::meet(const CompiledKernel &k, std::uint32_t index,
                        Clock::time_point deadline) {
  const std::string what = describe(k, index);
  // Two rounds: every rank ARRIVEs, then, having seen all, says GO; data moves only once every
  // GO is in. A rank that gives up before its GO therefore never leaves a peer inside a data
  // exchange it will not join (only a deadline passing within one message's flight could).
  for (const std::uint32_t type : {kArrive, kGo}) {
    {
      auto hold = rt_.lock();
      sendAll(type, index, k.name);
    }
    std::string problem;
    std::vector<std::deque<Control>> &queue = type == kArrive ? arrivals_ : goes_;
    const auto everyone = [&] {
      drain();
      bool all = true;
      for (int r = 0; r < ranks_ && problem.empty(); ++r) {
        const std::size_t q = std::size_t(r);
        if (r == me_)
          continue;
        if (!aborted_[q].empty()) {
          problem = what + " cannot complete: " + aborted_[q];
          break;
        }
        while (!queue[q].empty() && queue[q].front().sequence < sequence_)
          queue[q].pop_front(); // of a collective this rank gave up
        if (!queue[q].empty() && queue[q].front().sequence == sequence_) {
          const Control &c = queue[q].front();
          if (c.kernel != index)
            problem = "the ranks reached different collectives as the engine's #" +
                      std::to_string(sequence_) + ": rank " + std::to_string(me_) + " '" +
                      k.name + "' (kernel " + std::to_string(index) + ", run " +
                      std::to_string(run_) + "), rank " + std::to_string(r) + " '" + c.text +
                      "' (kernel " + std::to_string(c.kernel) + ", run " +
                      std::to_string(c.run) + ")";
          continue;
        }
        if (!left_[q].empty()) {
          problem = what + " cannot complete: rank " + std::to_string(r) + " " + left_[q];
          break;
        }
        all = false;
      }
      return all || !problem.empty();
    };
    if (!rt_.wait(everyone, deadline)) {
      std::vector<int> seen{me_}, missing;
      for (int r = 0; r < ranks_; ++r)
        if (r != me_)
          (queue[std::size_t(r)].empty() ? missing : seen).push_back(r);
      std::sort(seen.begin(), seen.end());
      fail(what + " timed out after " + seconds(timeout_) +
           " s (engine option aspen.collectives.timeout): rank" +
           (seen.size() > 1 ? "s " : " ") + listOf(seen) +
           (type == kArrive ? " arrived, rank" : " confirmed, rank") +
           (missing.size() > 1 ? "s " : " ") + listOf(missing) +
           (type == kArrive ? " did not" : " did not confirm (they arrived, then gave up)"));
    }
    if (!problem.empty())
      fail(problem);
    for (int r = 0; r < ranks_; ++r)
      if (r != me_)
        queue[std::size_t(r)].pop_front();
  }
}

void MpiTransport::waitFor(MPI_Request &request, const std::string &what,
                           Clock::time_point deadline) {
  int status = MPI_SUCCESS;
  const bool done = rt_.wait(
      [&] {
        int finished = 0;
        status = MPI_Test(&request, &finished, MPI_STATUS_IGNORE);
        return finished != 0 || status != MPI_SUCCESS;
      },
      deadline, /*spin=*/true);
  if (!done) {
    rt_.leftUnfinished();
    fail(what + ": the exchange of its data did not finish within " + seconds(timeout_) +
         " s (engine option aspen.collectives.timeout); a rank stopped in the middle of it");
  }
  if (status != MPI_SUCCESS)
    fail(what + ": " + mpi::errorText(status));
}

void MpiTransport::reduceAcross(const CompiledKernel &k,
                                const std::vector<const std::uint8_t *> &local,
                                std::uint8_t *whole, const std::string &what,
                                Clock::time_point deadline) {
  const std::size_t element = k.collective.type.size(), n = k.collective.elements;
  const std::size_t ranks = std::size_t(ranks_);
  const auto lo = [&](std::size_t r) { return n * r / ranks; };
  const std::size_t me = std::size_t(me_), mine = lo(me + 1) - lo(me);
  // To each rank: this rank's replicas' copies of its chunk, one after the other (straight
  // from the contribution when there is one).
  std::vector<int> sendCounts(ranks), sendAt(ranks), recvCounts(ranks), recvAt(ranks);
  const std::uint8_t *send = local.front();
  if (local.size() > 1) {
    send_.resize(local.size() * n * element);
    std::size_t at = 0;
    for (std::size_t r = 0; r < ranks; ++r)
      for (const std::uint8_t *b : local) {
        std::memcpy(send_.data() + at, b + lo(r) * element, (lo(r + 1) - lo(r)) * element);
        at += (lo(r + 1) - lo(r)) * element;
      }
    send = send_.data();
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    sendAt[r] = bytesCount(lo(r) * element * local.size(), what);
    sendCounts[r] = bytesCount((lo(r + 1) - lo(r)) * element * local.size(), what);
  }
  std::size_t received = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    recvAt[r] = bytesCount(received, what);
    recvCounts[r] = bytesCount(count_[r] * mine * element, what);
    received += std::size_t(recvCounts[r]);
  }
  recv_.resize(received);
  MPI_Request request;
  {
    auto hold = rt_.lock();
    mpi::check(MPI_Ialltoallv(send, sendCounts.data(), sendAt.data(), MPI_BYTE, recv_.data(),
                              recvCounts.data(), recvAt.data(), MPI_BYTE, comm_, &request),
               "MPI_Ialltoallv");
  }
  waitFor(request, what, deadline);
  // Every replica's copy of this rank's chunk, in replica order (ranks hold replicas in order),
  // reduced into its place in the whole (the contributions have all been sent).
  std::vector<const std::uint8_t *> copies(replicas_);
  for (unsigned i = 0; i < replicas_; ++i)
    copies[i] = recv_.data() + i * mine * element;
  if (mine > 0)
    collective::reduceInto(k.collective, copies, mine, whole + lo(me) * element);
  for (std::size_t r = 0; r < ranks; ++r) {
    recvAt[r] = bytesCount(lo(r) * element, what);
    recvCounts[r] = bytesCount((lo(r + 1) - lo(r)) * element, what);
  }
  {
    auto hold = rt_.lock();
    mpi::check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, whole, recvCounts.data(),
                               recvAt.data(), MPI_BYTE, comm_, &request),
               "MPI_Iallgatherv");
  }
  waitFor(request, what, deadline);
}

std::string MpiTransport::begin(const CompiledKernel &k, std::uint32_t index,
                                Clock::time_point deadline) {
  if (!broken_.empty())
    throw runtime_error(broken_);
  meet(k, index, deadline);
  std::string what = describe(k, index);
  ++sequence_;
  return what;
}

void MpiTransport::runDirect(const CompiledKernel &k, std::uint32_t index,
                             const std::uint8_t *data, std::uint8_t *result,
                             Clock::time_point deadline) {
  const std::string what = begin(k, index, deadline);
  if (k.kind != KernelKind::AllGather)
    return reduceAcross(k, {data}, result, what, deadline);
  gatherInto(data, k.collective.elements * k.collective.type.size(), result, what, deadline);
}

void MpiTransport::gatherInto(const std::uint8_t *mine, std::size_t each, std::uint8_t *all,
                              const std::string &what, Clock::time_point deadline) {
  const std::size_t ranks = std::size_t(ranks_);
  std::vector<int> counts(ranks), at(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    counts[r] = bytesCount(count_[r] * each, what);
    at[r] = bytesCount(first_[r] * each, what);
  }
  MPI_Request request;
  {
    auto hold = rt_.lock();
    mpi::check(MPI_Iallgatherv(mine, counts[std::size_t(me_)], MPI_BYTE, all, counts.data(),
                               at.data(), MPI_BYTE, comm_, &request),
               "MPI_Iallgatherv");
  }
  waitFor(request, what, deadline);
}

collective::Bytes MpiTransport::gather(const CompiledKernel &k,
                                       const std::vector<collective::Bytes> &local,
                                       const std::string &what, Clock::time_point deadline) {
  const std::size_t each = local.front().size();
  collective::Bytes mine;
  for (const collective::Bytes &b : local)
    mine.insert(mine.end(), b.begin(), b.end());
  collective::Bytes all(replicas_ * each);
  gatherInto(mine.data(), each, all.data(), what, deadline);
  if (k.kind == KernelKind::AllGather && collective::ungrouped(k)) // every one, in order
    return all;
  std::vector<collective::Bytes> contributions(replicas_);
  for (unsigned i = 0; i < replicas_; ++i)
    contributions[i].assign(all.begin() + std::ptrdiff_t(i * each),
                            all.begin() + std::ptrdiff_t((i + 1) * each));
  return collective::whole(k, contributions);
}

collective::Bytes MpiTransport::broadcast(const CompiledKernel &k,
                                          const std::vector<collective::Bytes> &local,
                                          const std::string &what, Clock::time_point deadline) {
  const unsigned root = k.collective.root;
  int owner = 0;
  while (root >= first_[std::size_t(owner)] + count_[std::size_t(owner)])
    ++owner;
  collective::Bytes data = owner == me_ ? local[root - first_[std::size_t(owner)]]
                                        : collective::Bytes(local.front().size());
  MPI_Request request;
  {
    auto hold = rt_.lock();
    mpi::check(MPI_Ibcast(data.data(), bytesCount(data.size(), what), MPI_BYTE, owner, comm_,
                          &request),
               "MPI_Ibcast");
  }
  waitFor(request, what, deadline);
  return data;
}

std::vector<std::uint8_t> MpiTransport::shareFromFirst(std::vector<std::uint8_t> bytes,
                                                       Clock::time_point deadline) {
  std::uint64_t size = bytes.size();
  const std::string what = "Engine::load (rank " + std::to_string(me_) + " of " +
                           std::to_string(ranks_) + "): sharing rank 0's communicator id";
  MPI_Request request;
  {
    auto hold = rt_.lock();
    mpi::check(MPI_Ibcast(&size, 1, MPI_UINT64_T, 0, comm_, &request), "MPI_Ibcast");
  }
  waitFor(request, what, deadline);
  bytes.resize(size);
  {
    auto hold = rt_.lock();
    mpi::check(MPI_Ibcast(bytes.data(), bytesCount(size, what), MPI_BYTE, 0, comm_, &request),
               "MPI_Ibcast");
  }
  waitFor(request, what, deadline);
  return bytes;
}

collective::Bytes MpiTransport::exchange(const CompiledKernel &k, std::uint32_t index,
                                         const std::vector<collective::Bytes> &local,
                                         Clock::time_point deadline) {
  const std::string what = begin(k, index, deadline);
  if (collective::elementwise(k)) {
    std::vector<const std::uint8_t *> pointers;
    for (const collective::Bytes &b : local)
      pointers.push_back(b.data());
    collective::Bytes whole(k.collective.elements * k.collective.type.size());
    reduceAcross(k, pointers, whole.data(), what, deadline);
    return whole;
  }
  if (k.kind == KernelKind::Broadcast && collective::ungrouped(k))
    return broadcast(k, local, what, deadline);
  return gather(k, local, what, deadline);
}

void startRuntime() { Runtime::get(); }

CollectiveTransport *joinEngine(const MpiJoin &join) {
  Runtime &rt = Runtime::get();
  if (join.localReplicas > 1 && rt.threadLevel() < MPI_THREAD_SERIALIZED)
    throw error("Engine::load: this rank runs " + std::to_string(join.localReplicas) +
                " replicas, which call MPI from their threads, and the program started MPI "
                "below MPI_THREAD_SERIALIZED: start it with MPI_Init_thread(..., "
                "MPI_THREAD_SERIALIZED, ...) or run one replica a rank");
  const unsigned engine = [&] {
    auto hold = rt.lock();
    return rt.nextEngine();
  }();
  JoinHeader header;
  header.engine = engine;
  header.fingerprint = join.fingerprint;
  header.replicationFactor = join.replicationFactor;
  header.firstReplica = join.firstReplica;
  header.localReplicas = join.localReplicas;
  std::vector<char> mine(sizeof header);
  std::memcpy(mine.data(), &header, sizeof header);
  for (std::size_t i = 0; i < join.schedule.size(); ++i) {
    if (i)
      mine.push_back('\n');
    mine.insert(mine.end(), join.schedule[i].begin(), join.schedule[i].end());
  }
  const std::vector<Joined> joins = gatherJoins(rt, engine, mine, join);
  checkJoins(joins, rt.rank());
  // Every rank has joined, so the engine's communicator can be made without waiting long.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request;
  {
    auto hold = rt.lock();
    mpi::check(MPI_Comm_idup(rt.world(), &comm, &request), "MPI_Comm_idup");
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(join.timeoutSeconds));
  if (!rt.wait(
          [&] {
            int done = 0;
            MPI_Test(&request, &done, MPI_STATUS_IGNORE);
            return done != 0;
          },
          deadline)) {
    rt.leftUnfinished();
    throw error("Engine::load: the ranks joined, but making their communicator did not finish "
                "within " + seconds(join.timeoutSeconds) + " s");
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return new MpiTransport(joins, comm, engine, join.timeoutSeconds);
}

} // namespace

} // namespace detail

} // namespace aspen

// The plugin's entry point (MpiPlugin.hpp): the only symbol libaspen_mpi.so exports.
extern "C" __attribute__((visibility("default"))) const aspen::detail::MpiPlugin *
aspen_mpi_plugin() {
  static const aspen::detail::MpiPlugin table{aspen::detail::kMpiPluginVersion,
                                              &aspen::detail::startRuntime,
                                              &aspen::detail::joinEngine};
  return &table;
}
