"""The Apache Airflow provider for natsobj; it needs the airflow extra."""

from natsobj.extras import require_extra

require_extra("airflow", "airflow_natsobj")

from airflow_natsobj.fs.path_flavour import register  # noqa: E402

register()
