use super::*;

const ALTER: &str = concat!(
    r#"{"ddl": "alter table post rename column name to nm", "tag": "ALTER TABLE", "#,
    r#""tables": [{"oid": 16444, "kind": "r", "table": "post", "change": "ALTER", "#,
    r#""schema": "public", "columns": [{"name": "id", "attnum": 1, "typmod": -1, "#,
    r#""comment": null, "default": null, "identity": "", "not_null": true, "type_oid": 23, "#,
    r#""generated": "", "type_name": "int4", "enum_values": null, "base_type_name": "int4", "#,
    r#""type_expression": "integer", "base_type_category": "N"}, {"name": "nm", "attnum": 2, "#,
    r#""typmod": 655366, "comment": "c", "default": "1", "identity": "", "not_null": false, "#,
    r#""type_oid": 1700, "generated": "", "type_name": "numeric", "enum_values": null, "#,
    r#""base_type_name": "numeric", "type_expression": "numeric(10,2)", "#,
    r#""base_type_category": "N"}], "comment": null, "previous": {"table": "pre", "#,
    r#""schema": "public", "columns": {"1": "id", "2": "name"}}, "primary_key": ["id"]}], "#,
    r#""version": 1}"#,
);

#[test]
fn a_capture_message_gives_ids_renames_and_column_facts() {
    let c = SchemaChange::parse(ALTER.as_bytes()).unwrap();
    let t = &c.tables[0];
    assert_eq!(t.id(), r#""public"."post""#);
    assert_eq!(t.previous_id().as_deref(), Some(r#""public"."pre""#));
    assert_eq!(t.renamed_columns(), vec![("name".into(), "nm".into())]);
    assert_eq!(jdbc_type(&t.columns[0]), jdbc::INTEGER);
    assert_eq!(jdbc_type(&t.columns[1]), jdbc::NUMERIC);
    assert_eq!(length_and_scale(&t.columns[1]), (Some(10), Some(2)));
    assert_eq!(length_and_scale(&t.columns[0]), (None, None));
}

#[test]
fn other_versions_and_shapes_are_refused_with_the_fix() {
    let e = SchemaChange::parse(br#"{"version": 2, "tables": []}"#).unwrap_err();
    assert!(e.to_string().contains("version 2"), "{e}");
    assert!(e.to_string().contains("schema-capture install"), "{e}");
    let e = SchemaChange::parse(b"not json").unwrap_err();
    assert!(e.to_string().contains("schema-capture install"), "{e}");
    let e = SchemaChange::parse(br#"{"version": 1, "tag": "x"}"#).unwrap_err();
    assert!(e.to_string().contains("unexpected shape"), "{e}");
}

#[test]
fn the_record_keeps_only_captured_tables_and_matches_its_schema() {
    let c = SchemaChange::parse(ALTER.as_bytes()).unwrap();
    let source = SourceInfo {
        name: Arc::from("p"),
        db: Arc::from("db"),
        ts_us: 1_000_000,
        snapshot: None,
        sequence: None,
        tx_id: Some(7),
        lsn: None,
        xmin: None,
        origin: None,
        origin_lsn: None,
    };
    assert!(schema_change_record("p", &source, &c, |_, _| false, 5, &[]).is_none());
    let r = schema_change_record("p", &source, &c, |_, t| t == "pre", 5, &[]).unwrap();
    assert_eq!(&*r.topic, "p");
    assert_eq!(r.partition, Some(0));
    // Kept for its name before the command; the rename is in the headers.
    let header = |k: &str| match &r.headers.iter().find(|h| &*h.key == k).unwrap().value {
        Value::String(s) => s.clone(),
        v => panic!("{v:?}"),
    };
    assert_eq!(
        header(PREVIOUS_IDS_HEADER),
        r#"{"\"public\".\"post\"":"\"public\".\"pre\""}"#
    );
    assert_eq!(
        header(RENAMED_COLUMNS_HEADER),
        r#"{"\"public\".\"post\"":[["name","nm"]]}"#
    );
    let Some(Value::Struct(v)) = &r.value else {
        panic!("{:?}", r.value)
    };
    let schema = r.value_schema.as_ref().unwrap();
    assert_eq!(v.len(), schema.fields.len());
    let Value::Array(changes) = &v[5] else {
        panic!("{:?}", v[5])
    };
    let Value::Struct(change) = &changes[0] else {
        panic!()
    };
    let Value::Struct(table) = &change[2] else {
        panic!()
    };
    let Value::Array(columns) = &table[2] else {
        panic!()
    };
    let Value::Struct(col) = &columns[1] else {
        panic!()
    };
    let col_schema = &schema.fields[5].schema.items.as_ref().unwrap().fields[2]
        .schema
        .fields[2]
        .schema
        .items
        .as_ref()
        .unwrap()
        .fields;
    assert_eq!(col.len(), col_schema.len());
    let field = |name: &str| &col[col_schema.iter().position(|f| f.name == name).unwrap()];
    assert_eq!(field("name"), &Value::String("nm".into()));
    assert_eq!(field("defaultValueExpression"), &Value::String("1".into()));
    assert_eq!(field("optional"), &Value::Bool(true));
    assert_eq!(field("position"), &Value::Int(2));
}

fn column(base: &str, typmod: i32) -> ColumnDefinition {
    ColumnDefinition {
        name: "c".into(),
        attnum: 1,
        type_oid: 0,
        typmod,
        type_name: base.into(),
        type_expression: base.into(),
        base_type_name: base.into(),
        base_type_category: "N".into(),
        not_null: false,
        default: None,
        identity: String::new(),
        generated: String::new(),
        comment: None,
        enum_values: None,
    }
}

#[test]
fn length_and_scale_follow_each_types_modifier() {
    let numeric = |p: i32, s: i32| column("numeric", ((p << 16) | (s & 0x7ff)) + 4);
    assert_eq!(length_and_scale(&numeric(10, 2)), (Some(10), Some(2)));
    assert_eq!(length_and_scale(&numeric(5, -2)), (Some(5), Some(-2)));
    assert_eq!(length_and_scale(&numeric(3, 5)), (Some(3), Some(5)));
    assert_eq!(length_and_scale(&column("varchar", 24)), (Some(20), None));
    assert_eq!(length_and_scale(&column("timestamp", 3)), (None, Some(3)));
    // interval day (fields only, no precision) and interval(2).
    assert_eq!(
        length_and_scale(&column("interval", (8 << 16) | 0xffff)),
        (None, None)
    );
    assert_eq!(
        length_and_scale(&column("interval", (0x7fff << 16) | 2)),
        (None, Some(2))
    );
}

#[test]
fn quotes_inside_names_are_doubled_in_ids() {
    let mut c = SchemaChange::parse(ALTER.as_bytes()).unwrap();
    c.tables[0].table = r#"We"ird"#.into();
    assert_eq!(c.tables[0].id(), r#""public"."We""ird""#);
}
