"""The process-wide client: settings, tracer, analyzer, recorder and ledger, wired once."""

from __future__ import annotations

import atexit
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from ctxledger import __about__
from ctxledger import semconv as sc
from ctxledger._analysis import AnalysisOptions, TextAnalyzer
from ctxledger._destination import DESTINATION_FILE, Destination
from ctxledger._drop_report import DropReporter
from ctxledger._export import BufferedSpanProcessor
from ctxledger._items import DEFAULT_ID_FIELDS, DEFAULT_ITEM_KEYS
from ctxledger._ledger import Ledger, open_ledger
from ctxledger._markers import DEFAULT_MARKERS, Marker, MarkerScanner
from ctxledger._otlp_config import SenderConfig
from ctxledger._otlp_sender import OTLPSender
from ctxledger._parked import ParkedBatches, parked_in
from ctxledger._pipeline_stats import DropCounter, PipelineStats
from ctxledger._recorder import Recorder
from ctxledger._settings import Settings
from ctxledger._spool import DiskSpool
from ctxledger._tokens import TokenCounter
from ctxledger.verdicts import Tolerances

logger = logging.getLogger("ctxledger")


def _application_provider() -> trace.TracerProvider | None:
    """The application's own SDK provider, if it configured one before us."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


def _own_resource(settings: Settings) -> Resource:
    attributes: dict[str, str] = {
        sc.SDK_NAME: "ctxledger",
        sc.SDK_VERSION: __about__.__version__,
        sc.SERVICE_INSTANCE_ID: str(uuid.uuid4()),
        sc.HOST_NAME: socket.gethostname(),
    }
    if settings.service_name:
        attributes[sc.SERVICE_NAME] = settings.service_name
    return Resource.create(attributes)


def _say_what_an_earlier_version_parked(folder: Path) -> None:
    """Batches right in the spool folder were parked by a ctxledger that did not record
    their collector: never sent (they might go to the wrong one), said once here."""
    parked = parked_in(folder)
    if parked is not None:
        logger.warning(
            "ctxledger: %s spans in %s were parked by an earlier ctxledger that did not "
            "record their collector; they are not sent (`ctxledger spool list` shows them, "
            "`ctxledger spool drop --folder %s` discards them)",
            f"{parked.spans:,}",
            folder,
            folder,
        )


def _own_pipeline(
    settings: Settings, counter: DropCounter, after_cycle: Callable[[], None]
) -> tuple[TracerProvider, BufferedSpanProcessor] | None:
    if not settings.export:
        return None
    config = SenderConfig.resolve(settings)
    spool = None
    if settings.spool_dir is not None:  # a folder per destination: replayed only there
        destination = Destination.of(config)
        spool = DiskSpool(
            destination.folder(Path(settings.spool_dir)),
            settings.spool_max_bytes,
            counter,
            label=(DESTINATION_FILE, destination.description(settings.service_name)),
        )
        _say_what_an_earlier_version_parked(Path(settings.spool_dir))
    # Our own exit hook shuts this provider down within a bounded time.
    provider = TracerProvider(resource=_own_resource(settings), shutdown_on_exit=False)
    processor = BufferedSpanProcessor(
        OTLPSender(config),
        counter,
        spool,
        max_queue=settings.max_queue,
        batch_size=settings.export_batch,
        delay_s=settings.export_delay_s,
        max_backoff_s=settings.export_max_backoff_s,
        after_cycle=after_cycle,
    )
    provider.add_span_processor(processor)
    return provider, processor


def _ledger_or_none(target: str | None, tolerances: Tolerances | None) -> Ledger | None:
    """The ledger ``target`` names, or None, said once, when it cannot be opened: the SDK
    never raises into the agent, and measuring goes on without the ledger."""
    try:
        return open_ledger(target, tolerances)
    except OSError as error:
        logger.warning(
            "ctxledger: cannot write the ledger to %r (%s); measuring and exporting go on "
            "without it (ledger= or CTXLEDGER_LEDGER: a file in a folder that exists, "
            "stderr, stdout or off)",
            target,
            error.strerror or error,
        )
        return None


class Client:
    """Everything the SDK needs at run time. One per process via :func:`configure`."""

    def __init__(
        self,
        settings: Settings,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        item_keys: tuple[str, ...] = DEFAULT_ITEM_KEYS,
        id_fields: tuple[str, ...] = DEFAULT_ID_FIELDS,
        must_keep: Callable[[Any], bool] | None = None,
        markers: tuple[Marker, ...] = DEFAULT_MARKERS,
        context_windows: dict[str, int] | None = None,
        ledger: Ledger | None = None,
        tolerances: Tolerances | None = None,
    ) -> None:
        self.settings = settings
        self.counter = DropCounter()
        self.context_windows = dict(context_windows or {})
        self.owned_provider: TracerProvider | None = None
        self._processor: BufferedSpanProcessor | None = None
        self._drop_reporter: DropReporter | None = None
        self._shut_down = False
        self._shutdown_lock = threading.Lock()
        provider = tracer_provider or _application_provider()
        if provider is None:
            pipeline = _own_pipeline(settings, self.counter, self._report_drops)
            if pipeline is not None:
                self.owned_provider, self._processor = pipeline
            provider = self.owned_provider or trace.NoOpTracerProvider()
        self.tracer = provider.get_tracer("ctxledger", __about__.__version__)
        if not isinstance(provider, trace.NoOpTracerProvider):
            self._drop_reporter = DropReporter(self.tracer, self.counter)
        options = AnalysisOptions(
            item_keys=item_keys,
            id_fields=id_fields,
            must_keep=must_keep,
            markers=MarkerScanner(markers),
        )
        self.analyzer = TextAnalyzer(options, TokenCounter(settings.max_exact_token_chars))
        self.ledger = ledger if ledger is not None else _ledger_or_none(settings.ledger, tolerances)
        self.recorder = Recorder(
            self.tracer,
            self.analyzer,
            self.counter,
            self.ledger,
            max_queue=settings.max_queue,
            capture_content=settings.capture_content,
            after_batch=self._report_drops if self._processor is None else None,
        )

    def _report_drops(self) -> None:
        if self._drop_reporter is not None:
            self._drop_reporter.report()

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Emit every queued measurement and export every buffered span."""
        done = self.recorder.flush(timeout_s)
        if self.owned_provider is not None:
            done = self.owned_provider.force_flush(int(timeout_s * 1000)) and done
        return done

    def shutdown(self, timeout_s: float = 30.0, say_what_is_parked: bool = True) -> None:
        """Emit and export what is pending within about ``timeout_s``; what cannot leave
        by then (a collector outage) stays in the spool for the next process, or without
        a spool is counted as dropped. Then (``say_what_is_parked``) a warning says what
        waits in the spool, where, and how to drop it."""
        with self._shutdown_lock:
            if self._shut_down:
                return
            self._shut_down = True
        deadline = time.monotonic() + timeout_s
        self.recorder.close(timeout_s)
        if self._drop_reporter is not None:
            self._drop_reporter.report(force=True)
        if self._processor is not None:
            self._processor.shutdown(max(deadline - time.monotonic(), 0.1))
        if self.owned_provider is not None:
            self.owned_provider.shutdown()
        if say_what_is_parked and (parked := self.parked()) is not None:
            logger.warning(parked_note(parked))

    def parked(self) -> ParkedBatches | None:
        """What waits in this client's spool folder (any process's), or None: nothing."""
        if self._processor is None or self._processor.spool is None:
            return None
        return parked_in(self._processor.spool.directory)

    def stats(self) -> PipelineStats:
        return self.counter.snapshot()


def parked_note(parked: ParkedBatches) -> str:
    """One line: how many spans wait, for which collector, where, and how to drop them."""
    url = parked.url or "its collector"
    return (
        f"ctxledger: {parked.spans:,} spans could not be delivered to {url} and are parked "
        f"in {parked.folder}; they are sent there, and only there, by the next process that "
        f"exports to it with the same credentials (`ctxledger spool list` shows what is parked, "
        f"`ctxledger spool drop --endpoint {url}` discards it)"
    )


_client: Client | None = None
_client_lock = threading.Lock()


def install(client: Client) -> Client:
    """Make ``client`` the process-wide client, shutting down the previous one."""
    global _client
    with _client_lock:
        previous, _client = _client, client
    if previous is not None:
        previous.shutdown(timeout_s=5.0)
    return client


def get_client() -> Client:
    """The process-wide client, configured from the environment on first use."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = Client(Settings.resolve())
    return _client


@atexit.register
def _flush_at_exit() -> None:
    if _client is not None:
        try:
            _client.shutdown(timeout_s=5.0)
        except Exception as error:  # never fail the interpreter's exit
            logger.debug("ctxledger: shutdown at exit failed: %r", error)
