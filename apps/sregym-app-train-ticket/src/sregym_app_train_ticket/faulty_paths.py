"""What each faulty flag's code path does, in the words the ground truth gives the judge.

One :class:`CodePath` per faulty ``tt-feat-N`` flag (N is the fault's number in the TrainTicket
fault-analysis study): the mechanism as the owning service runs it, the phrases that assert it
(judge-rules pattern syntax: ``a + b`` both in one sentence, ``word*`` a prefix), keywords and what
an SRE observes. The flag itself ("feature flag tt-feat-N switched on") is asserted through the
fault's common vocabulary (:data:`faults.VOCABULARY`); these phrases let a diagnosis that names the
code path's mechanism count too. None of them may read as another fault family (a timeout, a lock
on a table, a removed key...): the judge would take the diagnosis for a kitchen sink.
"""

from __future__ import annotations

from typing import NamedTuple


class CodePath(NamedTuple):
    study: str  # the study's fault id and its root cause, as published
    mechanism: str
    vocabulary: tuple[str, ...]
    keywords: tuple[str, ...]
    symptoms: tuple[str, ...]


CODE_PATHS: dict[str, CodePath] = {
    "tt-feat-1": CodePath(
        "F1: asynchronous message delivery lacks sequence control",
        "cancellation sends the refund to ts-inside-payment-service as an asynchronous message with no sequence "
        "control: the order is marked cancelled first, then the late refund marks it cancelling (status 5), so "
        "cancelled orders stay in status 5 although the money came back",
        ("asynchronous refund", "async refund", "refund* + asynchronous*", "refund* + async", "refund* + sequence",
         "refund* + out of order", "refund* + race*", "drawback + async*", "message* + sequence control"),
        ("asynchronous", "refund", "sequence control", "order status"),
        ("cancelled orders stay cancelling", "wrong order status")),
    "tt-feat-2": CodePath(
        "F2: different data requests for the same report are returned in an unexpected order",
        "a search requests the details of its trips in parallel and matches the answers to the trips in the order "
        "they arrive, not the order they were asked for, so a trip is listed with another trip's prices, seats "
        "and stations",
        ("arrival order", "order they arrive*", "answers + arrive*", "responses + arrive*", "details + arrive*",
         "parallel + mismatch*", "parallel + mixed up", "mixed up + trip*", "matched to the wrong trip*",
         "another trip's price*"),
        ("parallel", "arrival order", "trip details"),
        ("wrong prices", "wrong search results")),
    "tt-feat-5": CodePath(
        "F5: the high load of a type of requests causes the timeout failure of another type of requests",
        "a search collects its trips' details as asynchronous tasks on a shared two-thread pool, and each task "
        "runs its seat lookups as sub-tasks on the same pool: two trips fill both threads with tasks waiting for "
        "sub-tasks that cannot start until the 3 s wait gives up, so searches fail and bookings, whose trip "
        "details queue on the same pool, fail with them",
        ("thread pool", "task pool", "pool + starv*", "pool + exhaust*", "pool + deadlock*", "thread* + starv*",
         "sub task*", "subtask*", "nested task*", "async* task* + pool", "deadlock*"),
        ("thread pool", "asynchronous tasks", "starvation"),
        ("failed searches", "failed bookings", "slow responses")),
    "tt-feat-6": CodePath(
        "F6: endless recursive requests of a microservice caused by SQL errors of another dependent microservice",
        "the search prefetches routes with an empty id list (the missing ids computed the wrong way round), "
        "which ts-route-service's SQL rejects (MySQL error 1064: IN ()), and asks again recursively on every "
        "failure until 4.5 s have passed, so searches of ordinary trains crawl and fail while ts-route-service "
        "logs a stream of SQL errors",
        ("recursi*", "empty id list", "empty list + route*", "route prefetch", "prefetch* + route*", "1064",
         "sql syntax"),
        ("recursive requests", "route prefetch", "SQL"),
        ("slow searches", "SQL errors", "failed searches")),
    "tt-feat-7": CodePath(
        "F7: overload of requests to a third-party service leads to denial of service",
        "the payment gateway (the third-party payment) settles every charge with the bank before answering, "
        "which takes 6 s, longer than ts-inside-payment-service waits for it, so every payment fails on the "
        "caller's side while the gateway still records the charge",
        ("settlement", "settle* + bank", "bank + wait*", "third party + slow*", "gateway + slow*",
         "slow* + payment gateway", "gateway + settle*"),
        ("third-party payment", "bank settlement", "payment gateway"),
        ("failed payments", "slow payments")),
    "tt-feat-8": CodePath(
        "F8: the key of a certain type of users is missing from the requests delivered for them",
        "the booking builds its order request from a slim copy of the user that leaves the VIP member key out, "
        "so the order of a VIP member arrives without its key and ts-order-service refuses it (VIP order "
        "without the member's VIP key)",
        ("vip key", "vip member* + key", "vip + token", "slim + user", "member key"),
        ("VIP key", "VIP member", "order request"),
        ("failed bookings for VIP members",)),
    "tt-feat-10": CodePath(
        "F10: an API used in a special case of the business process returns unexpected output",
        "advance bookings (14 days ahead or more) look the contact up through the contacts-by-account API, "
        "handing it the contacts id; no account has that id, so no contact comes back and the booking is "
        "refused (No contacts according to contacts id)",
        ("wrong api", "wrong endpoint", "account api", "contacts + by account", "advance booking* + contact*",
         "contacts id + account*"),
        ("contacts API", "advance bookings", "special case"),
        ("refused bookings",)),
    "tt-feat-11": CodePath(
        "F11: two microservices set the same value in the wrong sequence, and the recheck does not always run",
        "the refund writes the order status (cancelling) after answering, so it lands after the cancel service "
        "has marked the order cancelled; the recheck that would see the order is already cancelled runs only "
        "for refunds above 350, so most cancelled orders stay in status 5",
        ("status + written after", "status + after + refund*", "refund* + overwrit*", "overwrit* + cancel*",
         "recheck*", "deferred + status", "same value + wrong sequence", "two services + same value"),
        ("order status", "refund", "recheck"),
        ("cancelled orders stay cancelling", "wrong order status")),
    "tt-feat-12": CodePath(
        "F12: a microservice in a specific status (its locked stations) rejects requests",
        "listing an account's orders marks the stations of those orders as locked and clears them under the "
        "pair turned the other way round, so the locks stay, and every later payment or cancellation of an "
        "order between those stations is rejected",
        ("locked station*", "station lock*", "lock* + station*", "lock* + never released", "lock* + not released",
         "lock leak*", "leak* + lock*"),
        ("locked stations", "order status change", "rejected"),
        ("rejected payments", "rejected cancellations")),
    "tt-feat-13": CodePath(
        "F13: requests of one user are executed in an unexpected order",
        "payments are queued and applied in batches up to 10 s later while the user is told the payment succeeded; a "
        "cancellation in between finds the order unpaid and refunds nothing, then the batch charges the "
        "cancelled order and marks it paid",
        ("batch* + payment*", "payment* + batch*", "payment* + queue*", "queued payment*", "payment* + applied later",
         "paid + after + cancel*", "cancel* + before + payment*"),
        ("payment queue", "batch", "refund"),
        ("missing refunds", "wrong order status")),
    "tt-feat-17": CodePath(
        "F17: nested SQL select clause error",
        "the sold-ticket query filters through a nested select whose select clause lists two columns "
        "(MySQL error 1241: Operand should contain 1 column(s)), so seat availability, search and booking fail",
        (), ("SQL", "column"), ("errors", "SQL errors", "failed requests")),
    "tt-feat-22": CodePath(
        "F22: SQL column name mismatch",
        "the contacts query reads a column that does not exist (document_num instead of document_number; "
        "MySQL error 1054: Unknown column), so contacts lookups and booking fail",
        (), ("SQL", "column"), ("errors", "SQL errors", "failed requests")),
}
